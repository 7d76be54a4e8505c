import ChannelAPI
import Foundation
import Router
import RouterTesting
import Testing

@testable import TelegramChannel

/// Issue 18: two workers (two stores on one PostgreSQL database) sending to the same chat share
/// the Telegram flood limits: the buckets live in channel state and are taken with an atomic
/// `update`, so the limit holds in total, not per process.
@Suite struct TelegramFloodLimitsAcrossWorkersTests {
    @Test func theLimitHoldsInTotalAcrossTwoWorkers() async throws {
        let url = try TestPostgres.start().createDatabase()
        let workers = [try PostgresStore(url: url), try PostgresStore(url: url)]
        defer { for w in workers { w.close() } }
        let limits = TelegramFloodLimits()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let chat = TelegramFloodLimits.chatKey(try #require(TelegramChatID("42")))
        let granted = try await withThrowingTaskGroup(of: (chat: Int, global: Int).self) { group in
            for w in workers {
                let state = w.channelState("telegram")
                group.addTask {
                    var chatTokens = 0
                    var globalTokens = 0
                    for _ in 0..<40 {
                        if try limits.take(chat, rate: 1, capacity: 1, state: state, now: now) == nil {
                            chatTokens += 1
                        }
                        if try limits.take(
                            TelegramFloodLimits.globalKey, rate: 30, capacity: 30, state: state, now: now)
                            == nil
                        {
                            globalTokens += 1
                        }
                    }
                    return (chatTokens, globalTokens)
                }
            }
            var total = (chat: 0, global: 0)
            for try await g in group { total = (total.chat + g.chat, total.global + g.global) }
            return total
        }
        // At one instant: one message per chat and 30 for the bot, whichever worker sends them.
        #expect(granted.chat == 1)
        #expect(granted.global == 30)
    }
}
