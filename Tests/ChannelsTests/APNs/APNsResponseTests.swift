import ChannelAPI
import HeraldHTTP
import Testing

@testable import APNsChannel

@Suite("APNs response classification")
struct APNsResponseTests {
    func classify(_ status: Int, _ reason: String?, activity: Bool = false) -> APNsResponseClass {
        let body = reason.map { Array("{\"reason\":\"\($0)\"}".utf8) } ?? []
        return APNsResponseClassifier.classify(status: status, body: body, activityToken: activity)
    }

    @Test func deadOnlyFor410AndBadDeviceToken() {
        #expect(classify(200, nil) == .delivered(apnsID: nil))
        #expect(
            APNsResponseClassifier.classify(status: 200, body: [], apnsID: "A-1") == .delivered(apnsID: "A-1"))
        let gone = APNsResponseClassifier.classify(
            status: 410, body: Array("{\"reason\":\"Unregistered\",\"timestamp\":1700000000000}".utf8))
        #expect(gone == .dead(reason: "Unregistered", timestamp: "1700000000000"))
        let goneString = APNsResponseClassifier.classify(
            status: 410, body: Array("{\"reason\":\"Unregistered\",\"timestamp\":\"1700000000000\"}".utf8))
        #expect(goneString == .dead(reason: "Unregistered", timestamp: "1700000000000"))
        #expect(classify(410, "ExpiredToken") == .dead(reason: "ExpiredToken", timestamp: nil))
        #expect(classify(400, "BadDeviceToken") == .dead(reason: "BadDeviceToken", timestamp: nil))
        // A proxy's HTML 410 is not a dead token.
        if case .dead = APNsResponseClassifier.classify(status: 410, body: Array("<html>gone</html>".utf8)) {
            Issue.record("non-APNs 410 must not kill the device")
        }
        // A Live Activity push token that died does not kill the device.
        if case .dead = classify(410, "Unregistered", activity: true) { Issue.record("activity token kept device") }
    }

    @Test func failedKeepsTheDevice() {
        #expect(classify(400, "DeviceTokenNotForTopic") == .failed(reason: "DeviceTokenNotForTopic", configError: true))
        #expect(classify(403, "InvalidProviderToken") == .failed(reason: "InvalidProviderToken", configError: true))
        #expect(classify(403, "MissingProviderToken") == .failed(reason: "MissingProviderToken", configError: true))
        #expect(
            classify(403, "BadEnvironmentKeyInToken") == .failed(reason: "BadEnvironmentKeyInToken", configError: true))
        #expect(classify(400, "BadCollapseId") == .failed(reason: "BadCollapseId", configError: false))
        #expect(classify(413, "PayloadTooLarge") == .failed(reason: "PayloadTooLarge", configError: false))
        #expect(classify(400, "SomethingNew") == .failed(reason: "SomethingNew", configError: false))
        #expect(classify(404, "BadPath") == .failed(reason: "BadPath", configError: false))
        #expect(
            APNsResponseClassifier.classify(status: 400, body: Array("oops".utf8))
                == .failed(reason: "HTTP 400: oops", configError: false))
    }

    @Test func retries() {
        #expect(classify(403, "ExpiredProviderToken") == .expiredProviderToken)
        #expect(
            APNsResponseClassifier.classify(
                status: 429, body: Array("{\"reason\":\"TooManyRequests\"}".utf8), retryAfter: .seconds(30))
                == .retry(reason: "TooManyRequests", retryAfter: .seconds(30), configError: false))
        #expect(
            classify(500, "InternalServerError")
                == .retry(reason: "InternalServerError", retryAfter: nil, configError: false))
        #expect(
            classify(503, "ServiceUnavailable")
                == .retry(reason: "ServiceUnavailable", retryAfter: nil, configError: false))
        #expect(classify(503, "Shutdown") == .retry(reason: "Shutdown", retryAfter: nil, configError: false))
        #expect(classify(400, "IdleTimeout") == .retry(reason: "IdleTimeout", retryAfter: nil, configError: false))
        #expect(
            classify(429, "TooManyProviderTokenUpdates")
                == .retry(reason: "TooManyProviderTokenUpdates", retryAfter: .seconds(1200), configError: true))
        for code in [HTTPError.Code.timeout, .connectFailed, .transport] {
            guard case .retry = APNsResponseClassifier.classify(error: HTTPError(code, "x")) else {
                Issue.record("\(code) must be retried")
                continue
            }
        }
        guard case .failed = APNsResponseClassifier.classify(error: HTTPError(.tls, "bad cert")) else {
            Issue.record("TLS failure is a configuration problem")
            return
        }
    }
}
