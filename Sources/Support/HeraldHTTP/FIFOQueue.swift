/// A first-in, first-out queue: appending and taking the first are O(1) (the taken prefix is dropped
/// once it is half the storage).
struct FIFOQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    /// Elements waiting.
    var count: Int { items.count - head }

    mutating func append(_ item: Element) { items.append(item) }

    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Removes and returns the first element that matches.
    mutating func remove(where match: (Element) -> Bool) -> Element? {
        guard let i = items[head...].firstIndex(where: match) else { return nil }
        return items.remove(at: i)
    }

    /// Removes and returns every element that matches, in order.
    mutating func removeAll(where match: (Element) -> Bool) -> [Element] {
        let waiting = items[head...]
        let removed = waiting.filter(match)
        if !removed.isEmpty {
            items = waiting.filter { !match($0) }
            head = 0
        }
        return removed
    }

    /// Every element, in order.
    var elements: [Element] { Array(items[head...]) }
}
