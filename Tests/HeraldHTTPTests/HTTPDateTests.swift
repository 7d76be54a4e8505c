import HeraldHTTP
import Testing

/// HTTP dates through libcurl: RFC 9110 §5.6.7's example in its three forms is 784111777.
@Suite struct HTTPDateTests {
    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // obsolete RFC 850 format
        "Sun Nov  6 08:49:37 1994",  // ANSI C's asctime() format
    ])
    func theThreeFormsOfRFC9110(_ text: String) {
        #expect(HTTPDate.secondsSince1970(text) == 784_111_777)
    }

    @Test func otherDates() {
        #expect(HTTPDate.secondsSince1970("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.secondsSince1970("Wed, 21 Oct 2015 07:28:00 GMT") == 1_445_412_480)
    }

    @Test(arguments: ["", "soon", "Sun, 99 Foo 1994 08:49:37 GMT", "tomorrow at noon"])
    func notADate(_ text: String) {
        #expect(HTTPDate.secondsSince1970(text) == nil)
    }
}
