import Foundation
import HeraldHTTPTesting
import Testing

/// Issue 36: every folder under `Examples/` has a README whose steps work as written. The steps are
/// the README's fenced blocks marked `tested`; `Scripts/readme_steps.py` runs them literally (from
/// the repository root, with this build's binaries and free ports), so a README cannot drift from
/// the code. Only a browser's push service is left out (see Examples/web/README.md).
@Suite("Example READMEs run as written", .serialized)
struct ExampleReadmeTests {
    static let root = ServeProcess.repositoryRoot
    static let examples = [
        "PulseSiteKit", "HubPython", "HubTypeScript", "EmbeddedHub", "NtfyChannel", "web", "exec", "CustomHerald",
        "local",
    ]

    /// The folder of the binaries under test (`herald`, `EmbeddedHub`).
    static var binaries: String { URL(fileURLWithPath: ServeProcess.binary).deletingLastPathComponent().path }

    @Test func everyExampleHasAReadmeWithTestedSteps() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/Examples").sorted()
        #expect(folders == Self.examples.sorted(), "a new example needs a README with tested steps, and a case here")
        for folder in folders {
            let readme = try String(contentsOfFile: Self.root + "/Examples/\(folder)/README.md", encoding: .utf8)
            #expect(readme.contains("```sh tested"), "Examples/\(folder)/README.md has no tested steps")
        }
    }

    /// CustomHerald's steps build a package of their own (Herald as its dependency): `make custom-herald`
    /// runs them in CI, outside `swift test`, which holds this package's build lock.
    @Test(arguments: examples.filter { $0 != "CustomHerald" })
    func stepsRunAsWritten(_ example: String) throws {
        for tool in ["python3", "curl", "openssl", "bash"] {
            try #require(Subprocess.find(tool) != nil, "\(tool) is needed (scripts/install-deps.sh)")
        }
        if example == "HubTypeScript" {
            try #require(Subprocess.find("tsc") != nil, "tsc (Debian node-typescript) is needed: make deps")
            try #require(Subprocess.find("node") != nil, "node is needed: make deps")
        }
        if example == "EmbeddedHub" || example == "NtfyChannel" {
            let hub = Self.binaries + "/EmbeddedHub"
            try #require(FileManager.default.isExecutableFile(atPath: hub), "\(hub) missing: swift build --build-tests")
        }
        let r = try Subprocess.run(
            executable: "python3",
            arguments: [
                Self.root + "/Tests/ServerTests/Scripts/readme_steps.py", Self.root + "/Examples/\(example)/README.md",
                "--bin", Self.binaries,
            ])
        #expect(r.code == 0, "Examples/\(example)/README.md: exit \(r.code)\n\(r.stdout)\n\(r.stderr)")
    }
}
