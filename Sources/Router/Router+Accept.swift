import ChannelAPI
import Foundation

// Group commit (issue 17): `herald serve` gathers the accepted sends (`wait=none`) and the device
// registrations that arrive while the store is committing, and stores each gathering in one
// transaction. The server does the gathering; these are the batch operations it calls.
extension Router {
    /// The most items (notifications or devices) one group commit stores; requests beyond it wait
    /// for the next commit.
    public static let groupCommitLimit = 256

    /// Plans and persists each notification exactly as ``enqueue(_:)`` does (route, cooldowns, plan,
    /// outbox rows, the event log's `notification` entry, badge tag, `suppressed` delivery events),
    /// with one store transaction for all of them (``HeraldStore/insertNotifications(_:now:)``).
    /// Returns one result per notification, in input order: the number of outbox rows stored for it
    /// (planned deliveries, suppressed ones included); one that fails (a duplicate id:
    /// ``StoreError/duplicateNotification(_:)``) fails alone. When the transaction as a whole fails,
    /// every notification of the batch fails with that error and none is stored.
    ///
    /// The namespace's device counts are read once per namespace for the batch; the store expands each
    /// outline against the devices inside the transaction, so no device list is read or held here.
    /// Nothing is attempted: the worker
    /// (``run()``) or `herald drain` delivers.
    public func enqueue(batch notifications: [HeraldNotification]) -> [Result<Int, any Error>] {
        var results = enqueueKeyed(batch: notifications)
        // Ids are unique per namespace (NotificationKey): a send refused because another
        // namespace's notification holds its id is stored under its scoped key, in a second commit.
        var retry: [(index: Int, notification: HeraldNotification)] = []
        for (index, result) in results.enumerated() {
            guard case .failure(StoreError.duplicateNotification) = result else { continue }
            let n = notifications[index]
            guard !NotificationKey.isScoped(n.id),
                let holder = try? store.notification(id: n.id), holder.notification.namespace != n.namespace
            else { continue }
            var scoped = n
            scoped.id = NotificationKey.scoped(n.id, namespace: n.namespace)
            retry.append((index, scoped))
        }
        guard !retry.isEmpty else { return results }
        for (entry, result) in zip(retry, enqueueKeyed(batch: retry.map(\.notification))) {
            results[entry.index] = result
        }
        return results
    }

    /// ``enqueue(batch:)`` with every notification stored under its own id as it is.
    func enqueueKeyed(batch notifications: [HeraldNotification]) -> [Result<Int, any Error>] {
        let g = currentGraph
        let now = options.clock.now()
        var results: [Result<Int, any Error>] = []
        results.reserveCapacity(notifications.count)
        var platformCounts: [String: [String: Int]] = [:]
        var planned: [Int] = []
        var inserts: [NotificationInsert] = []
        var batchIds: Set<String> = []
        for (index, notification) in notifications.enumerated() {
            do {
                try checkPlatformOptions(notification)
                // The same id twice in one batch: only the first can be stored.
                if batchIds.contains(notification.id) { throw StoreError.duplicateNotification(notification.id) }
                let (routeName, steps) = g.config.routes.route(for: notification.namespace)
                var cooled: Set<Int> = []
                if let tag = notification.collapseTag {
                    let keys = steps.enumerated().compactMap { i, s in
                        s.cooldown.map { (key: "\(routeName)#\(i)", window: $0) }
                    }
                    if !keys.isEmpty {
                        // Touching a cooldown is a write of its own: never for an id already stored
                        // (the insert would refuse it after the cooldown had moved).
                        if try store.notification(id: notification.id) != nil {
                            throw StoreError.duplicateNotification(notification.id)
                        }
                        let hits = try store.touchCooldowns(
                            namespace: notification.namespace, tag: tag, keys: keys, now: now)
                        cooled = Set(steps.indices.filter { hits.contains("\(routeName)#\($0)") })
                    }
                }
                // The outline needs the namespace's device count per platform only for an
                // `unless-registered` step (counted once per namespace for the batch); the store
                // expands device groups itself, so other routes never read the registry here.
                let ns = notification.namespace
                let counts: [String: Int]
                if !Planner.needsDeviceCounts(notification, config: g.config, cooledDownSteps: cooled) {
                    counts = [:]
                } else if let known = platformCounts[ns] {
                    counts = known
                } else {
                    counts = try store.devicePlatformCounts(namespace: ns)
                    platformCounts[ns] = counts
                }
                let outline = Planner.outline(
                    notification, config: g.config, platformCounts: counts, cooledDownSteps: cooled)
                planned.append(index)
                batchIds.insert(notification.id)
                // The store expands the outline against the devices (no device list is read here).
                inserts.append(
                    NotificationInsert(notification: notification, steps: outline.steps, groups: outline.groups))
                // A placeholder until the store answers.
                results.append(.success(OutboxGroup.rowCount(outline.groups, platformCounts: counts)))
            } catch {
                results.append(.failure(error))
            }
        }
        guard !inserts.isEmpty else { return results }
        let stored: [Result<Int, any Error>]
        var planSuppressed: [DeliveryRecord] = []
        do {
            stored = try store.insertNotifications(inserts, now: now) { planSuppressed.append($0) }
        } catch {
            for index in planned { results[index] = .failure(error) }
            return results
        }
        for (index, outcome) in zip(planned, stored) {
            do {
                results[index] = .success(try outcome.get())
                let notification = notifications[index]
                if let tag = notification.collapseTag {
                    try store.addBadgeTag(namespace: notification.namespace, tag: tag, now: now)
                }
            } catch {
                results[index] = .failure(error)
            }
        }
        for r in planSuppressed { hub.emit(.delivery(r)) }
        // A store that answered fewer results than items: the rest are not known to be stored.
        for index in planned.dropFirst(stored.count) {
            results[index] = .failure(
                StoreError.writeFailed(operation: "store a notification", detail: "the store gave no result for it"))
        }
        return results
    }

    // MARK: Registrations

    /// A device validated for registration (``prepareRegistration(_:)``), waiting to be stored.
    public struct PreparedRegistration: Sendable {
        let checked: CheckedRegistration
        /// The device as it will be stored (normalized by the channels that serve it).
        public var device: Device { checked.device }
    }

    /// Validates `device` as ``register(_:)-(Device)`` does (the generic rules, then every channel
    /// that will serve it); throws ``ValidationError`` naming the field. Nothing is stored.
    public func prepareRegistration(_ device: Device) async throws -> PreparedRegistration {
        PreparedRegistration(checked: try await checkRegistration(device))
    }

    /// Upserts prepared devices with one store transaction for all of them
    /// (``HeraldStore/upsertDevicesIndividually(_:now:)``). One result per device, in input order; a
    /// device that fails fails alone. When the transaction as a whole fails, every device of the
    /// batch fails with that error and none is stored. Finish each stored one with
    /// ``finishRegistration(_:_:)``.
    public func storeRegistrations(batch: [PreparedRegistration]) -> [Result<UpsertResult, any Error>] {
        guard !batch.isEmpty else { return [] }
        do {
            let stored = try store.upsertDevicesIndividually(batch.map(\.checked.device), now: options.clock.now())
            return batch.indices.map { i in
                i < stored.count
                    ? stored[i]
                    : .failure(
                        StoreError.writeFailed(
                            operation: "register a device", detail: "the store gave no result for it"))
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
    }

    /// Tells the serving channels about a stored registration (as ``register(_:)-(Device)`` does after
    /// its upsert) and returns its result.
    public func finishRegistration(_ prepared: PreparedRegistration, _ upsert: UpsertResult) async
        -> RegistrationResult
    {
        for channel in prepared.checked.serving { await channel.didRegister(prepared.checked.device) }
        return prepared.checked.result(upsert)
    }
}
