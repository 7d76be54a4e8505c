import ChannelAPI
import HeraldChannels
import TelegramChannel
import Testing

/// The `telegram` platform descriptor (declared by TelegramChannel): chat ids never trap, and the
/// address is `telegram:<chat id>` (moved from ChannelAPITests with the descriptor, issue 16).
@Suite struct TelegramPlatformTests {
    @Test(arguments: ["1e300", "18446744073709551616", "9007199254740993", "1.5", "-1e300"])
    func aTelegramChatIdMustBeAnExactInteger(_ number: String) {
        do {
            _ = try HeraldChannels.registry.device(
                jsonText: #"{"deviceId":"t","platform":"telegram","chatId":\#(number)}"#)
            Issue.record("expected chatId \(number) to be refused")
        } catch {
            #expect(error.field == "chatId", "\(error)")
        }
    }

    @Test func aTelegramChatIdThatFitsIsKept() throws {
        let d = try HeraldChannels.registry.device(
            jsonText: #"{"deviceId":"t","platform":"telegram","chatId":-1001234567890}"#)
        #expect(d.chatIdString == "-1001234567890")
        #expect(d.address == "telegram:-1001234567890")
    }
}
