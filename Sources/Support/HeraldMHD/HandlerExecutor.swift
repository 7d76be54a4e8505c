import Dispatch
import Foundation
import HeraldSync

/// A task executor with its own threads, on which the server runs request handlers and stream
/// writers (`Task(executorPreference:)`; their child tasks and the async code they await follow).
///
/// The API so keeps answering when the global concurrency pool is busy or held up by blocking code
/// elsewhere in the process (an embedding app, a test run with many suites): a health check or a
/// long-poll answer never waits behind unrelated work.
public final class HandlerExecutor: TaskExecutor, @unchecked Sendable {
    struct Queue {
        var jobs: [UnownedJob] = []
        var head = 0
        var stopped = false
    }

    private let queue = Locked(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let threadCount: Int

    /// Starts `threads` threads named `name`.
    public init(threads: Int, name: String = "herald.handlers") {
        threadCount = max(1, threads)
        for i in 0..<threadCount {
            let thread = Thread { [self] in run() }
            thread.name = "\(name).\(i)"
            thread.start()
        }
    }

    /// Queues a job; after ``shutdown()`` jobs go to the global concurrent executor.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let accepted = queue.withLock { q -> Bool in
            if q.stopped { return false }
            q.jobs.append(unowned)
            return true
        }
        if accepted {
            available.signal()
        } else {
            globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
        }
    }

    /// Stops the threads once the queued jobs have run; later jobs run on the global executor.
    public func shutdown() {
        queue.withLock { $0.stopped = true }
        for _ in 0..<threadCount { available.signal() }
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            available.wait()
            let next = queue.withLock { q -> (job: UnownedJob?, stop: Bool) in
                guard q.head < q.jobs.count else { return (nil, q.stopped) }
                let job = q.jobs[q.head]
                q.head += 1
                if q.head > 1024, q.head * 2 > q.jobs.count {
                    q.jobs.removeFirst(q.head)
                    q.head = 0
                }
                return (job, false)
            }
            if let job = next.job {
                job.runSynchronously(on: executor)
            } else if next.stop {
                return
            }
        }
    }
}
