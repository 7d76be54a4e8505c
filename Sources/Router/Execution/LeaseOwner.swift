import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who holds an outbox lease: `pid:<pid>:<nonce>:<host>`, where `<host>` names the PID space the
/// pid belongs to (the kernel's boot id and the process's PID-namespace inode, `<boot-id>.<inode>`).
///
/// Leases expire by time and their holder renews them while it works. A process may release another
/// owner's leases early only when it can prove that owner is gone: the owner's PID space is known
/// and is its own, and no process with that pid exists. Containers sharing a store have different
/// PID namespaces (or run on different hosts), so their leases are never judged by `kill(pid, 0)`;
/// they simply expire. An owner id without a host part (older versions) gets no shortcut either.
struct LeaseOwner: Sendable, Equatable {
    /// The holder's process id.
    var pid: Int32
    /// A per-router random part (several routers may share a process).
    var nonce: String
    /// The PID space of `pid`; nil when unknown.
    var host: String?

    /// The stored form.
    var id: String {
        if let host { return "pid:\(pid):\(nonce):\(host)" }
        return "pid:\(pid):\(nonce)"
    }

    /// An owner for this process.
    init(pid: Int32, nonce: String, host: String?) {
        self.pid = pid
        self.nonce = nonce
        self.host = host
    }

    /// Parses a stored owner id; nil for any other form.
    init?(parsing id: String) {
        let parts = id.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, parts[0] == "pid", let pid = Int32(parts[1]), pid > 0,
            !parts[2].isEmpty
        else { return nil }
        self.pid = pid
        nonce = String(parts[2])
        host = parts.count == 4 && !parts[3].isEmpty ? String(parts[3]) : nil
    }

    /// Whether the leases of `other` may be released now, before they expire: only when `other` is a
    /// process of this PID space (`localHost`, known) other than this one, and `processExists` says
    /// its pid is not running. Unknown forms, other hosts and other PID namespaces wait for expiry.
    static func isGone(
        _ other: String, me: String, localHost: String?, currentPID: Int32, processExists: (Int32) -> Bool
    ) -> Bool {
        guard other != me, let localHost, let owner = LeaseOwner(parsing: other), owner.host == localHost,
            owner.pid != currentPID
        else { return false }
        return !processExists(owner.pid)
    }

    /// Whether a process with this pid exists in this PID namespace (`kill(pid, 0)`; a process we
    /// may not signal exists too).
    static func processExists(_ pid: Int32) -> Bool {
        if kill(pid, 0) == 0 { return true }
        return errno != ESRCH
    }

    /// This process's PID space: `/proc/sys/kernel/random/boot_id` and the inode of
    /// `/proc/self/ns/pid`, as `<boot-id>.<inode>`; nil when either cannot be read.
    static func currentHost() -> String? {
        guard let boot = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8),
            let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")
        else { return nil }
        return host(bootID: boot, pidNamespaceLink: link)
    }

    /// `<boot-id>.<inode>` from the boot id file's text and the namespace link (`pid:[4026531836]`);
    /// nil when either is not in the expected form.
    static func host(bootID: String, pidNamespaceLink: String) -> String? {
        let boot = bootID.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard boot.count >= 8, boot.count <= 64, boot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else { return nil }
        guard pidNamespaceLink.hasPrefix("pid:["), pidNamespaceLink.hasSuffix("]") else { return nil }
        let inode = pidNamespaceLink.dropFirst(5).dropLast()
        guard !inode.isEmpty, inode.count <= 20, inode.allSatisfy(\.isASCIIDigit) else { return nil }
        return "\(boot).\(inode)"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
