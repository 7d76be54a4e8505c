import ChannelAPI
import ChannelSupport
import RouterTesting
import Testing

@Suite struct DeliveryBatchTests {
    static func targets(_ n: Int) -> [DeliveryTarget] {
        (0..<n).map {
            DeliveryTarget(device: Device(deviceId: "d\($0)", platform: "p", fields: [:]), deliveryId: "id\($0)")
        }
    }

    @Test func preparesSendsClassifiesInTargetOrder() async {
        let http = ScriptedTransport { request in
            .success(HTTPResponse(status: request.url.hasSuffix("/2") ? 503 : 200))
        }
        let targets = Self.targets(4)
        let results = await DeliveryBatch.deliver(
            targets, over: http, maxInFlight: 2,
            prepare: { t -> DeliveryBatch.Preparation<String> in
                t.deliveryId == "id1"
                    ? .result(.failed(t, reason: "refused locally"))
                    : .send(HTTPRequest(url: "https://x.example/\(t.deliveryId.dropFirst(2))"), t.deliveryId)
            },
            classify: { t, context, answer in
                #expect(context == t.deliveryId)
                guard case .success(let r) = answer, r.status == 200 else { return .retry(t, reason: "busy") }
                return .delivered(t, status: 200)
            })
        #expect(results.map(\.deliveryId) == ["id0", "id1", "id2", "id3"])
        #expect(results.map(\.outcome) == [.delivered, .failed, .retry, .delivered])
        #expect(http.requests.count == 3)
    }

    @Test func completeFillsNotAttempted() {
        let targets = Self.targets(3)
        let results = DeliveryBatch.complete(targets, [.delivered(targets[0]), nil])
        #expect(results.map(\.outcome) == [.delivered, .retry, .retry])
        #expect(results.map(\.deliveryId) == ["id0", "id1", "id2"])
        #expect(results[2].reason == "not attempted")
    }

    struct RenewError: Error { let message: String }

    /// Items rejected for the credential are resent once with a renewed one; rejected again (or when
    /// renewing fails) they are given up with the reason.
    @Test(arguments: [0, 1, 2]) func renewsOnce(_ scenario: Int) async {
        var renewals = 0
        var sends: [[Int]] = []
        let out = await CredentialRenewal.send(
            [1, 2, 3], with: "old",
            send: { batch, credential -> [(Int, CredentialRenewal.Answer<String, Int>)] in
                sends.append(batch)
                return batch.map { item in
                    // Item 2 is rejected with the old credential; in scenario 1 also with the new one.
                    if item == 2, credential == "old" || scenario == 1 { return (item, .rejected(401)) }
                    return (item, .done("\(item):\(credential)"))
                }
            },
            renew: { old -> Result<String, RenewError> in
                renewals += 1
                return scenario == 2 ? .failure(RenewError(message: "no network")) : .success("new")
            },
            giveUp: { item, status, why in
                switch why {
                case .rejectedAgain: "\(item):gave up \(status) again"
                case .renewalFailed(let e): "\(item):gave up \(status) \(e.message)"
                }
            })
        #expect(renewals == 1)
        switch scenario {
        case 0:
            #expect(out == ["1:old", "3:old", "2:new"])
            #expect(sends == [[1, 2, 3], [2]])
        case 1:
            #expect(out == ["1:old", "3:old", "2:gave up 401 again"])
            #expect(sends == [[1, 2, 3], [2]])
        default:
            #expect(out == ["1:old", "3:old", "2:gave up 401 no network"])
            #expect(sends == [[1, 2, 3]])
        }
    }
}
