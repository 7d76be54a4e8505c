// swift-tools-version:6.0
// Herald's libFuzzer targets. A separate package so that the main build never compiles them:
// `make fuzz` builds it with `--sanitize=fuzzer --sanitize=address` (see scripts/fuzz.sh).
// Each target is one executable whose only entry point is `LLVMFuzzerTestOneInput`.
import PackageDescription

let flags: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

func target(_ name: String, _ deps: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name, dependencies: ["FuzzInput"] + deps, path: "Sources/\(name)", swiftSettings: flags)
}

let herald: (String) -> Target.Dependency = { .product(name: $0, package: "Herald") }

let package = Package(
    name: "HeraldFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Herald", path: "..")],
    targets: [
        .target(name: "FuzzInput", path: "Sources/FuzzInput"),
        target("fuzz-config", [herald("Router"), herald("HeraldChannels"), herald("HeraldServer")]),
        target("fuzz-json", [herald("ChannelAPI")]),
        target("fuzz-device", [herald("ChannelAPI"), herald("HeraldChannels")]),
        target("fuzz-notification", [herald("ChannelAPI")]),
        target("fuzz-retry-after", [herald("ChannelSupport"), herald("Router")]),
        target("fuzz-apns-response", [herald("HeraldChannels"), herald("ChannelSupport")]),
        target("fuzz-fcm-response", [herald("HeraldChannels")]),
        target("fuzz-webpush-response", [herald("HeraldChannels")]),
        target("fuzz-telegram-response", [herald("HeraldChannels")]),
        target("fuzz-telegram-update", [herald("HeraldChannels")]),
        target("fuzz-relay-response", [herald("HeraldChannels"), herald("ChannelSupport")]),
        target("fuzz-live-activity", [herald("HeraldChannels")]),
        target(
            "fuzz-http-api", [herald("HeraldServer"), herald("Router"), herald("HeraldChannels"), herald("ChannelAPI")]),
    ]
)
