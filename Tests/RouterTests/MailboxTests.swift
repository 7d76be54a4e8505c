import Testing

@testable import Router

/// ``Mailbox``: what ``Executor/deliver(requestTimeout:bound:grace:_:)`` waits on.
@Suite struct MailboxTests {
    /// Values put while nobody waits are kept, and taken oldest first.
    @Test func valuesPutBeforeATakeAreKeptInOrder() async {
        let box = Mailbox<Int?>()
        box.put(1)
        box.put(nil)
        box.put(3)
        #expect(await box.take() == 1)
        #expect(await box.take() == nil)
        #expect(await box.take() == 3)
    }

    /// A take waits until another task puts, and gets that value.
    @Test func aTakeWaitsForThePut() async {
        let box = Mailbox<String>()
        let taker = Task { await box.take() }
        try? await Task.sleep(for: .milliseconds(20))
        box.put("late")
        #expect(await taker.value == "late")
    }

    /// Puts racing from many tasks all arrive, each once.
    @Test func concurrentPutsAllArrive() async {
        let box = Mailbox<Int>()
        let count = 500
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<count { group.addTask { box.put(i) } }
            var seen: [Int] = []
            for _ in 0..<count { seen.append(await box.take()) }
            #expect(seen.sorted() == Array(0..<count))
        }
    }
}
