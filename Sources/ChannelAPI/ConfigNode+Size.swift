import Foundation

extension ConfigNode {
    /// Reads a size: bytes (`65536`) or with a unit (`512B`, `64KiB`, `1MiB`). Nil when unreadable
    /// or too large for an `Int`.
    public static func parseSize(_ text: String) -> Int? {
        let units: [(String, Int)] = [("KiB", 1024), ("MiB", 1024 * 1024), ("B", 1)]
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var factor = 1
        for (suffix, f) in units where number.hasSuffix(suffix) {
            number = Substring(number.dropLast(suffix.count).trimmingCharacters(in: .whitespaces))
            factor = f
            break
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(number) else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: factor)
        return overflow ? nil : product
    }
}
