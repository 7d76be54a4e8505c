import Testing

@testable import HeraldPostgres

/// Issue #30 item 6: every libpq secret parameter (`password`, `sslpassword`,
/// `oauth_client_secret`) is taken out of a `store.url` shown in logs and errors; paths such as
/// `sslkey` stay.
@Suite struct PostgresURLTests {
    @Test func everySecretParameterIsDroppedAndPathsStay() {
        #expect(
            PostgresURL.redacted(
                "postgresql://u:pw@db:5432/herald?sslmode=verify-full&sslpassword=k3y-pass&sslkey=/etc/k.pem")
                == "postgresql://u@db:5432/herald?sslmode=verify-full&sslkey=/etc/k.pem")
        #expect(
            PostgresURL.redacted("postgresql://db/herald?SSLPassword=x1&oauth_client_secret=s2&password=p3")
                == "postgresql://db/herald")
        // A percent-encoded key is still the key.
        #expect(PostgresURL.redacted("postgresql://db/h?ssl%70assword=x1") == "postgresql://db/h")
        #expect(PostgresURL.secretParameters == ["password", "sslpassword", "oauth_client_secret"])
    }

    @Test func keywordValueStringsLoseTheirSecretsQuotedOrNot() {
        #expect(
            PostgresURL.redacted("host=db sslpassword='a b\\' c' password = pw user=herald")
                == "host=db user=herald")
        #expect(PostgresURL.passwords(in: "host=db sslpassword='a b\\' c'").contains("a b' c"))
    }

    @Test func scrubbingRemovesTheSSLPasswordFromMessages() {
        let url = "postgresql://u@db/h?sslpassword=Sup3rSecretKeyPass"
        let message = "could not load private key: bad passphrase Sup3rSecretKeyPass for \(url)"
        let scrubbed = PostgresURL.scrub(message, url: url)
        #expect(!scrubbed.contains("Sup3rSecretKeyPass"), "\(scrubbed)")
        #expect(scrubbed.contains("postgresql://u@db/h"))
    }
}
