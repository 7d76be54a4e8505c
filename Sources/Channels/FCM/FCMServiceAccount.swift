import ChannelAPI
import Foundation
import HeraldCrypto

/// Why a Google service-account key file could not be used.
public struct FCMServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file that was read.
    public let file: String
    /// The JSON field at fault, or nil when the file as a whole is (unreadable, not JSON).
    public let field: String?
    /// What is wrong, naming the field when there is one.
    public let message: String

    /// `service-account file FILE: missing field client_email` and the like.
    public var description: String { "service-account file \(file): \(message)" }
}

/// A Google service-account key file (the JSON downloaded from the Firebase console).
///
/// Only `project_id`, `client_email`, `private_key`, `token_uri` and (optionally) `private_key_id`
/// are used. The private key never leaves this value; ``description`` does not show it.
public struct FCMServiceAccount: Sendable, CustomStringConvertible {
    /// The Firebase project id, used in the send URL.
    public let projectId: String
    /// The service account's e-mail: the assertion's `iss` and `sub`.
    public let clientEmail: String
    /// The key id, sent as the assertion's `kid` when present.
    public let privateKeyId: String?
    /// The OAuth token endpoint: the assertion's `aud` and where it is exchanged.
    public let tokenURI: String
    /// The signing key.
    let key: RSAPrivateKey
    /// The PEM text, kept only to register it as a secret with the logger.
    let privateKeyPEM: String

    /// Parses a key file's JSON. `file` is used in error messages only.
    /// - Throws: ``FCMServiceAccountError`` naming the file and the field.
    public init(json bytes: [UInt8], file: String) throws(FCMServiceAccountError) {
        /// Why `file` cannot be used, at `field` (nil: the file as a whole).
        func refusal(_ field: String?, _ message: String) -> FCMServiceAccountError {
            FCMServiceAccountError(file: file, field: field, message: message)
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw refusal(nil, "is not valid JSON (\(error.description))")
        }
        guard let o = value.objectValue else {
            throw refusal(nil, "is not a JSON object")
        }
        func required(_ name: String) throws(FCMServiceAccountError) -> String {
            guard let v = o[name], !v.isNull else {
                throw refusal(name, "missing field \(name)")
            }
            guard let s = v.stringValue, !s.isEmpty else {
                throw refusal(name, "field \(name) must be a non-empty string")
            }
            return s
        }
        if let t = o["type"]?.stringValue, t != "service_account" {
            throw refusal("type", "field type is \"\(t)\", expected \"service_account\"")
        }
        let projectId = try required("project_id")
        guard projectId.utf8.count <= 128,
            projectId.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-.:_".unicodeScalars.contains($0))
            })
        else {
            throw refusal("project_id", "field project_id must be a project id (letters, digits, - . : _)")
        }
        let clientEmail = try required("client_email")
        guard clientEmail.contains("@") else {
            throw refusal("client_email", "field client_email must be an e-mail address")
        }
        let tokenURI = try required("token_uri")
        guard tokenURI.hasPrefix("https://") else {
            throw refusal("token_uri", "field token_uri must be an https URL")
        }
        let pem = try required("private_key")
        do {
            key = try RSAPrivateKey(pemRepresentation: pem)
        } catch {
            throw refusal(
                "private_key",
                "field private_key is not a PEM RSA private key of 2048+ bits (\(error.message))")
        }
        var keyId: String?
        if let v = o["private_key_id"], !v.isNull {
            guard let s = v.stringValue else {
                throw refusal("private_key_id", "field private_key_id must be a string")
            }
            keyId = s.isEmpty ? nil : s
        }
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
        self.privateKeyId = keyId
        self.privateKeyPEM = pem
    }

    /// Reads and parses a key file.
    /// - Throws: ``FCMServiceAccountError`` when the file is missing, unreadable or invalid.
    public static func load(path: String) throws(FCMServiceAccountError) -> FCMServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FCMServiceAccountError(file: path, field: nil, message: "cannot be read (missing or not readable)")
        }
        guard data.count <= 1 << 20 else {
            throw FCMServiceAccountError(file: path, field: nil, message: "is larger than 1 MiB")
        }
        return try FCMServiceAccount(json: Array(data), file: path)
    }

    /// The key used for the token cache: one access token per service account and token endpoint.
    public var cacheKey: String { "oauth-token:\(clientEmail)|\(tokenURI)" }

    /// `project_id` and `client_email`; never the key.
    public var description: String { "FCMServiceAccount(project: \(projectId), client: \(clientEmail))" }
}
