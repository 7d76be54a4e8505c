import ChannelAPI

extension LocalStreamHub {
    /// What a confirmation names: the device (namespace and id) and the notification.
    struct ConfirmKey: Hashable {
        var namespace: String
        var notificationId: String
        var deviceId: String

        init(namespace: String, notificationId: String, deviceId: String) {
            self.namespace = namespace
            self.notificationId = notificationId
            self.deviceId = deviceId
        }

        init(_ push: LocalPush) {
            self.init(namespace: push.namespace, notificationId: push.notificationId, deviceId: push.deviceId)
        }
    }

    /// The pushes waiting for their confirmation, by delivery id, indexed by ``ConfirmKey``: a
    /// confirmation finds its pushes at once instead of looking at every push that waits (at 1,000
    /// notifications/s with silent apps, hundreds wait at any time).
    struct WaiterTable {
        private var byDelivery: [String: Waiter] = [:]
        private var byConfirm: [ConfirmKey: Set<String>] = [:]

        /// The push of delivery `key`; setting it (or nil) keeps the index.
        subscript(key: String) -> Waiter? {
            get { byDelivery[key] }
            set {
                _ = removeValue(forKey: key)
                guard let waiter = newValue else { return }
                byDelivery[key] = waiter
                byConfirm[ConfirmKey(waiter.push), default: []].insert(key)
            }
        }

        /// Removes the push of delivery `key` and returns it.
        mutating func removeValue(forKey key: String) -> Waiter? {
            guard let waiter = byDelivery.removeValue(forKey: key) else { return nil }
            let confirm = ConfirmKey(waiter.push)
            byConfirm[confirm]?.remove(key)
            if byConfirm[confirm]?.isEmpty == true { byConfirm[confirm] = nil }
            return waiter
        }

        /// The deliveries a confirmation of `confirm` ends.
        func keys(confirmedBy confirm: ConfirmKey) -> [String] { byConfirm[confirm].map { Array($0) } ?? [] }

        /// The deliveries written to the stream `id`.
        func keys(onStream id: UInt64) -> [String] { byDelivery.filter { $0.value.streams.contains(id) }.map(\.key) }
    }
}
