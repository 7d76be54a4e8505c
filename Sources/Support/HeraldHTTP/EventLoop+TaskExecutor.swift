extension EventLoop: TaskExecutor {
    /// Runs `job` on the loop thread between two rounds of `curl_multi_perform`. Once the loop has stopped,
    /// jobs go to the global concurrent executor instead.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if isLoopThread && !exiting {
            localJobs.append(unowned)
            return
        }
        let accepted = shared.withLock { shared in
            if shared.stopRequested { return false }
            shared.executorJobs.append(unowned)
            wakeLocked(&shared)
            return true
        }
        if !accepted { globalConcurrentExecutor.enqueue(ExecutorJob(unowned)) }
    }
}
