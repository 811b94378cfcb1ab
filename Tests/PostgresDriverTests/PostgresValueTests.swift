import Foundation
import PigeonDomain
@testable import PostgresDriver
import Testing
@testable import PigeonStore
import PigeonTestSupport

@Suite("Array and URL encoding", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct PostgresValueTests {
    @Test("text arrays round-trip quotes, backslashes, commas, braces, NULL-like text and Unicode")
    func arrays() {
        let values = ["plain", "with \"quotes\"", "back\\slash", "a,b", "{braces}", "NULL", "", "Заголовок 🚀", " spaced "]
        let decoded = PostgresArray.decode(PostgresArray.encode(values))
        #expect(decoded == values.map(Optional.some))
        #expect(PostgresArray.decode("{a,NULL,\"b c\"}") == ["a", nil, "b c"])
        #expect(PostgresArray.decode("{}") == [])
        #expect(PostgresArray.encode(["a\"b", "c\\", "plain", nil]) == #"{"a\"b","c\\","plain",NULL}"#)
    }

    @Test("bytea in text form round-trips every byte; anything else is refused")
    func bytea() {
        let bytes = Data((0..<512).map { UInt8($0 % 256) })
        let text = PostgresBytea.encode(bytes)
        #expect(text.hasPrefix("\\x00010203") && text.count == 2 + 1024)
        #expect(PostgresBytea.decode(text) == bytes)
        #expect(PostgresBytea.decode("\\xABcd") == Data([0xAB, 0xCD]))
        #expect(PostgresBytea.decode("\\x") == Data())
        for bad in ["abcd", "\\xabc", "\\xzz", ""] { #expect(PostgresBytea.decode(bad) == nil, "\(bad)") }
    }

    @Test("typed row decoding: each column as its type; NULL, missing and malformed columns are errors naming the column, never quoting the value")
    func rowDecoding() throws {
        let row: [String?] = ["42", "SENT", "t", "1.5", nil, "0123abcdef-token"]
        #expect(try row.decode(0, "id", as: Int64.self) == 42)
        #expect(try row.decode(1, "state", as: DeliveryState.self) == .sent)
        #expect(try row.decode(2, "done", as: Bool.self))
        #expect(try row.decode(3, "at", as: Double.self) == 1.5)
        #expect(try row.decodeIfPresent(4, "error", as: String.self) == nil)
        for (index, column) in [(4, "error"), (9, "beyond"), (5, "token")] {
            do {
                _ = try row.decode(index, column, as: Int.self)
                Issue.record("column \(column) decoded")
            } catch {
                #expect(error.message.contains(column), "\(error.message)")
                #expect(!error.message.contains("0123abcdef"), "\(error.message)")
            }
        }
        #expect(throws: PostgresError.self) { try row.decode(1, "state", as: PushEnvironment.self) }
        #expect(throws: PostgresError.self) { try row.decode(0, "flag", as: Bool.self) }
    }

    @Test("rows read by column name: every column as its type, an epoch as a Date; a missing, NULL or malformed column throws naming it; one bad row fails the whole read instead of vanishing")
    func namedRows() throws {
        let result = PostgresRows(columns: ["id", "state", "sent_at", "token", "id"],
                                  rows: [["7", "SENT", "1800000000.5", "0123abcdef-token", "other"], ["8", "QUEUED", nil, nil, nil]])
        let first = try #require(result.named.first)
        #expect(try first.decode("id", as: Int64.self) == 7, "the first column of a name wins")
        #expect(try first.decode("state", as: DeliveryState.self) == .sent)
        #expect(try first.decode("sent_at", as: Date.self) == Date(timeIntervalSince1970: 1_800_000_000.5))
        #expect(try result.named[1].decodeIfPresent("sent_at", as: Date.self) == nil)
        for (column, row) in [("absent", first), ("sent_at", result.named[1]), ("token", first)] {
            do {
                _ = try row.decode(column, as: Int.self)
                Issue.record("column \(column) decoded")
            } catch {
                #expect(error.message.contains(column) && !error.message.contains("0123abcdef"), "\(error.message)")
            }
        }
        #expect(try result.decoded { try $0.decode("id", as: Int.self) } == [7, 8])
        #expect(throws: PostgresError.self, "the second row has no token: the read fails, it does not return one row") {
            try result.decoded { try $0.decode("token", as: String.self) }
        }
        #expect(try PostgresRows().decodedFirst { try $0.decode("id", as: Int.self) } == nil)
        #expect(Date(postgresText: "nan") == nil && Date(postgresText: "2026-12-04") == nil)
    }

    @Test("a count read as a scalar: the value, or an error naming it for no row, NULL or garbage — never a zero")
    func typedScalar() throws {
        #expect(try PostgresRows(columns: ["count"], rows: [["42"]]).scalar(as: Int.self, "the count") == 42)
        for rows in [PostgresRows(columns: ["count"]), PostgresRows(columns: ["count"], rows: [[nil]]), PostgresRows(columns: ["count"], rows: [["4x"]])] {
            do {
                _ = try rows.scalar(as: Int.self, "the count of devices")
                Issue.record("no error for \(rows.rows)")
            } catch {
                #expect(error.message.contains("the count of devices"), "\(error)")
            }
        }
    }

    @Test("the JDBC form becomes a libpq URI")
    func jdbc() throws {
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://localhost/pigeon") == "postgresql://localhost/pigeon")
        // pgjdbc's ssl=true checks the certificate and the host name.
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://db:5433/p?user=u&password=p&ssl=true") == "postgresql://db:5433/p?user=u&password=p&sslmode=verify-full")
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://db/p?sslmode=verify-ca&ssl=true&sslrootcert=/etc/ca.pem") == "postgresql://db/p?sslrootcert=/etc/ca.pem&sslmode=verify-ca")
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://db/p?ssl=true&sslfactory=org.postgresql.ssl.NonValidatingFactory") == "postgresql://db/p?sslmode=require")
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://db/p?ssl=false") == "postgresql://db/p?sslmode=disable")
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql:pigeon") == "postgresql://localhost/pigeon")
        #expect(throws: PostgresError.self) { try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://h/d?prepareThreshold=3") }
    }

    @Test("several hosts: the JDBC multi-host form carries over, and only a writable server is accepted")
    func multiHost() throws {
        #expect(try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://h1:5432,h2:5433/pigeon?targetServerType=primary")
                == "postgresql://h1:5432,h2:5433/pigeon?target_session_attrs=read-write")
        let jdbc = try PostgresConnectionSettings(url: "jdbc:postgresql://h1:5432,h2:5433/pigeon")
        #expect(jdbc.value("host") == "h1,h2")
        #expect(jdbc.value("port") == "5432,5433")
        #expect(jdbc.value("target_session_attrs") == "read-write")
        let libpq = try PostgresConnectionSettings(url: "postgresql://h1,h2/pigeon?target_session_attrs=any")
        #expect(libpq.value("target_session_attrs") == "any")
        #expect(try PostgresConnectionSettings(url: "postgresql://h1/pigeon").value("target_session_attrs") == nil)
        #expect(throws: PostgresError.self) { try PostgresConnectionSettings.libpqForm(of: "jdbc:postgresql://h/d?targetServerType=whatever") }
    }

    @Test("GSS encryption is not probed for unless dbUrl asks for it")
    func gssEncryption() throws {
        #expect(try PostgresConnectionSettings(url: "postgresql://h1/pigeon").value("gssencmode") == "disable")
        #expect(try PostgresConnectionSettings(url: "postgresql://h1/pigeon?gssencmode=require").value("gssencmode") == "require")
    }

    @Test("dbUsername and dbPassword fill only what the URL lacks; descriptions hide the password")
    func credentials() throws {
        let filled = try PostgresConnectionSettings(url: "jdbc:postgresql://localhost/pigeon", username: "test", password: "testpassword")
        #expect(filled.value("user") == "test")
        #expect(filled.value("password") == "testpassword")
        #expect(filled.value("dbname") == "pigeon")
        #expect(!filled.redacted.contains("testpassword"))
        let kept = try PostgresConnectionSettings(url: "postgresql://owner:pw@h:1/d", username: "other", password: "x")
        #expect(kept.value("user") == "owner")
        #expect(kept.value("password") == "pw")
        #expect(throws: PostgresError.self) { try PostgresConnectionSettings(url: "postgresql://h/d?nosuchparameter=1") }
    }
}
