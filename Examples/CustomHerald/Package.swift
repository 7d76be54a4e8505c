// swift-tools-version:6.0
// A `herald` with one more channel type (ntfy), built from Herald's products: the way to ship a
// channel module to operators (Caddy's xcaddy and Telegraf's custom builds are the model).
import PackageDescription

let package = Package(
    name: "CustomHerald",
    platforms: [.macOS(.v15)],
    // The binary is `herald-ntfy` (install it as `herald`): Herald's own `herald` product is in the
    // same package graph, and two products of one name would build one binary.
    products: [.executable(name: "herald-ntfy", targets: ["CustomHerald"])],
    dependencies: [.package(name: "Herald", path: "../..")],
    targets: [
        .executableTarget(
            name: "CustomHerald",
            dependencies: [
                .product(name: "HeraldCommand", package: "Herald"),
                .product(name: "HeraldChannels", package: "Herald"),
                .product(name: "NtfyChannel", package: "Herald"),
            ])
    ]
)
