import ChannelAPI
import HeraldHTTP

enum HTTPClientHolder {
    static var shared: HTTPClient {
        get throws { try HTTPClient(configuration: HTTPClientConfiguration()) }
    }
}
