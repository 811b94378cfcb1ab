// swift-tools-version:6.0
import PackageDescription

/// Pigeon: a push-notification gateway for banks.
///
/// Dependencies point one way: `SOAPCodec`, `PigeonStore` and `PigeonHTTP` know nothing of each
/// other; `PigeonServer` composes them; the `pigeon` executable is thin. Every C library is reached
/// through a system-library target that exactly one Swift module imports.
let package = Package(
    name: "Pigeon",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pigeon", targets: ["pigeon"]),
        .executable(name: "pigeon-bench", targets: ["pigeon-bench"]),
    ],
    targets: [
        // MARK: C libraries (thin system-library targets and shims)
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypt",
            pkgConfig: "libxcrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),
        .systemLibrary(
            name: "CLDAP",
            pkgConfig: "ldap",
            providers: [.apt(["libldap-dev"])]
        ),
        .target(
            name: "CLDAPShim",
            dependencies: ["CLDAP"]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "CCurlShim",
            dependencies: ["CCurl"]
        ),
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .target(
            name: "CH2ServerShim",
            dependencies: ["CNGHTTP2", "COpenSSL"]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .target(
            name: "CXMLShim",
            dependencies: ["CLibXML2"]
        ),
        .target(
            name: "CHTTPShim",
            dependencies: ["CMicroHTTPD"],
            // Client certificates are checked through the GnuTLS session libmicrohttpd runs on.
            linkerSettings: [.linkedLibrary("gnutls")]
        ),

        // MARK: Swift modules
        // The domain: notifications, deliveries and their states, devices, routes, passes, Live
        // Activities, reports to the bank. Plain values and rules, no I/O, no dependencies.
        .target(name: "PigeonDomain"),
        // Infrastructure every module shares: logging, metrics, the lifecycle, concurrency helpers.
        .target(name: "PigeonCore"),
        .target(name: "SOAPCodec", dependencies: ["CXMLShim"]),
        // The bank's SOAP contract (CONTRACT §1, §3): the inbound and outbound services' messages
        // and types as SOAPCodec describes them, shared by the gateway, the bank proxy's client,
        // the bank stub and the load generator.
        .target(name: "BankContract", dependencies: ["SOAPCodec", "PigeonDomain"]),
        .target(name: "PigeonCrypto", dependencies: ["COpenSSL", "CCrypt"]),
        // Opens confidential pushes (CONTRACT §8) as a phone does: plain Swift on CryptoKit on
        // Apple platforms (a notification service extension copies it), on PigeonCrypto elsewhere.
        .target(name: "PigeonDecryptor", dependencies: [.target(name: "PigeonCrypto", condition: .when(platforms: [.linux]))]),
        // An HTTP client on libcurl's multi interface (HTTP/2 over TLS, HTTP/1.1 otherwise) for
        // every outbound call: push services and the bank proxy.
        .target(name: "OutboundHTTP", dependencies: ["CCurlShim", "PigeonCore"]),
        // Push services' protocols without I/O: messages, request bodies, response outcomes,
        // retry schedules, provider-token timing.
        .target(name: "PushCore", dependencies: ["PigeonCore"]),
        // The push services over HTTP/2 (libcurl through OutboundHTTP).
        .target(name: "PushTransport", dependencies: ["PushCore", "PigeonCrypto", "OutboundHTTP", "PigeonDomain"]),
        // The bank proxy's SOAP client (CONTRACT §3).
        .target(name: "BankProxy", dependencies: ["BankContract", "SOAPCodec", "OutboundHTTP", "PigeonDomain"]),
        // `pigeon bank-stub`: a reference bank proxy for local runs, integrators and tests.
        .target(name: "PigeonBankStub", dependencies: ["BankContract", "SOAPCodec", "PigeonHTTP", "PigeonCore"]),
        // `pigeon simulate`: APNs, FCM and OAuth over HTTP/2 + TLS for tests and local runs, and
        // Wallet devices calling the gateway's PassKit web service (over OutboundHTTP).
        .target(name: "PigeonSimulator", dependencies: ["CH2ServerShim", "PigeonCrypto", "PigeonCore", "PigeonDomain", "OutboundHTTP", "PigeonDecryptor", "PushCore"]),
        // The PostgreSQL driver: libpq behind a pool, typed rows and queries built by
        // interpolation; it knows no table of ours.
        .target(
            name: "PostgresDriver",
            dependencies: ["CLibPQ", "PigeonCore"]
        ),
        .target(
            name: "PigeonStore",
            dependencies: ["PostgresDriver", "PigeonCore", "PigeonDomain"]
        ),
        .target(
            name: "PigeonHTTP",
            dependencies: ["CHTTPShim", "PigeonCore"]
        ),
        // The delivery engine, written against small protocols (queue, notifications, devices,
        // push senders, clock, random source) and tested with in-memory fakes.
        .target(name: "PigeonDelivery", dependencies: ["PigeonCore", "PigeonDomain", "PushCore"]),
        // `server.conf`: the configuration language, the gateway's settings with their ranges and
        // defaults, and the checks made before start-up (certificates, push apps, exposure).
        .target(name: "PigeonConfiguration", dependencies: ["PigeonCore", "PigeonDomain", "PigeonHTTP", "PigeonCrypto", "PushTransport", "PushCore"]),
        // Apple Wallet passes: the PassKit web service the devices call, `.pkpass` packaging and
        // signing, and the ZIP writer under it (CONTRACT §7).
        .target(name: "PigeonWallet", dependencies: ["BankContract", "PigeonCore", "PigeonDomain", "PigeonCrypto", "PigeonHTTP", "SOAPCodec"]),
        // The operators' console: sign-in and sessions, the HTML pages and their JSON, what it
        // reads from the stores and the metrics.
        .target(name: "PigeonLDAP", dependencies: ["CLDAPShim", "PigeonCore"]),
        .target(name: "PigeonConsole", dependencies: ["PigeonCore", "PigeonDomain", "PigeonCrypto", "PigeonHTTP", "PigeonLDAP"]),
        // The phones' JSON API (CONTRACT §2): registration and its confirmation by the bank,
        // acknowledgements, encryption keys, Live Activity tokens; limits per address and user.
        .target(name: "PigeonDeviceAPI", dependencies: ["PigeonCore", "PigeonDomain", "PigeonCrypto", "PigeonHTTP", "PushCore"]),
        // The bank's SOAP service (CONTRACT §1, §9): every operation against the stores, the WSDL,
        // and the outbound WSDL the bank's proxy implements.
        .target(name: "PigeonBankService", dependencies: ["BankContract", "SOAPCodec", "PigeonCore", "PigeonDomain", "PushCore", "PigeonCrypto", "PigeonHTTP", "PigeonWallet"]),
        .target(
            name: "PigeonServer",
            dependencies: ["PigeonBankService", "PigeonDeviceAPI", "PigeonConsole", "PigeonWallet", "PigeonConfiguration", "PigeonCore", "PigeonDomain", "PigeonStore", "PigeonHTTP", "PushCore", "PushTransport", "PigeonDelivery", "PigeonCrypto", "OutboundHTTP", "BankProxy", "PigeonLDAP", "PostgresDriver"]
        ),
        // The `pigeon` command line: serve, migrate, check-config, outbox, and the simulator and
        // bank stub for local runs (so the gateway library links neither).
        .target(
            name: "PigeonCommandLine",
            dependencies: ["PigeonServer", "PigeonConfiguration", "PigeonCore", "PigeonDomain", "PigeonStore", "PigeonSimulator", "PigeonBankStub", "OutboundHTTP", "PigeonCrypto"]
        ),
        // Helpers shared by the test targets (a real PostgreSQL from the environment).
        .target(
            name: "PigeonTestSupport",
            dependencies: ["BankProxy", "PigeonBankService", "PigeonConsole", "PigeonDelivery", "PigeonDeviceAPI", "PigeonWallet", "PigeonStore", "PigeonCore", "PigeonDomain", "PigeonSimulator", "PushCore", "PostgresDriver"]
        ),
        // jemalloc replaces glibc's malloc in the server: dozens of connection threads allocate
        // per request, and glibc's arenas cost 10-15% of throughput in the ingest benchmark.
        .executableTarget(
            name: "pigeon",
            dependencies: ["PigeonCommandLine", "PigeonCore"],
            linkerSettings: [.linkedLibrary("jemalloc")]
        ),

        // Load generator for bench/ (kept out of the test run).
        .executableTarget(name: "pigeon-bench", dependencies: ["BankContract", "SOAPCodec", "PushCore", "PushTransport", "PigeonStore", "PigeonCore", "PigeonCrypto", "PostgresDriver"]),

        // libFuzzer targets for the parsers of outside bytes; built for fuzzing by fuzz/run.sh only.
        .executableTarget(name: "pigeon-fuzz", dependencies: ["BankContract", "PigeonConfiguration", "PigeonConsole", "PigeonCore", "PigeonDomain", "PigeonDeviceAPI", "PigeonHTTP", "PigeonWallet", "PushCore", "SOAPCodec", "PigeonTestSupport"]),

        // MARK: Tests
        .testTarget(name: "PigeonDomainTests", dependencies: ["PigeonDomain", "PigeonTestSupport"]),
        .testTarget(name: "PigeonCoreTests", dependencies: ["PigeonCore", "PigeonTestSupport"]),
        .testTarget(name: "BankProxyTests", dependencies: ["BankProxy", "OutboundHTTP", "PigeonBankStub", "PigeonCore", "PigeonDeviceAPI", "PigeonDomain", "PigeonTestSupport"]),
        .testTarget(name: "PigeonConfigurationTests", dependencies: ["PigeonConfiguration", "PigeonBankService", "PigeonCore", "PigeonDomain", "PigeonDeviceAPI", "PigeonHTTP", "PigeonTestSupport"]),
        .testTarget(name: "PigeonHTTPTests", dependencies: ["PigeonHTTP", "PigeonWallet", "PigeonTestSupport"]),
        .testTarget(name: "PigeonDecryptorTests", dependencies: ["PigeonDecryptor", "PigeonCrypto", "PushCore", "PigeonTestSupport"]),
        .testTarget(name: "SOAPCodecTests", dependencies: ["BankContract", "SOAPCodec", "PigeonTestSupport"]),
        .testTarget(name: "OutboundHTTPTests", dependencies: ["OutboundHTTP", "PigeonCore", "PigeonTestSupport"]),
        .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "PigeonTestSupport"]),
        .testTarget(name: "PushTransportTests", dependencies: ["PushTransport", "PushCore", "PigeonDomain", "PigeonCrypto", "PigeonTestSupport"]),
        .testTarget(name: "PigeonDeliveryTests", dependencies: ["PigeonDelivery", "PigeonCore", "PigeonDomain", "PushCore", "PigeonStore", "PigeonTestSupport", "PostgresDriver"]),
        .testTarget(name: "PigeonSimulatorTests", dependencies: ["PigeonSimulator", "PushCore", "PushTransport", "OutboundHTTP", "PigeonCrypto", "PigeonTestSupport"]),
        .testTarget(name: "PostgresDriverTests", dependencies: ["PostgresDriver", "PigeonStore", "PigeonCore", "PigeonDomain", "PigeonTestSupport"]),
        .testTarget(name: "PigeonStoreTests", dependencies: ["PigeonStore", "PigeonCore", "PigeonDomain", "PigeonTestSupport", "PostgresDriver"]),
        .testTarget(name: "PigeonWalletTests", dependencies: ["PigeonWallet", "PigeonConfiguration", "PigeonCore", "PigeonDomain", "PigeonCrypto", "PigeonHTTP", "PigeonTestSupport"]),
        // The unit tier's request side: the router and every endpoint on in-memory stores.
        .testTarget(name: "RequestSideTests", dependencies: ["PigeonCrypto", "PigeonServer", "PigeonBankService", "PigeonDeviceAPI", "PigeonWallet", "PigeonConfiguration", "PigeonHTTP", "PigeonCore", "PigeonDomain", "PigeonStore", "PigeonTestSupport", "BankProxy", "PigeonConsole"]),
        .testTarget(
            name: "PigeonServerTests",
            dependencies: ["PigeonServer", "PigeonBankService", "PigeonDeviceAPI", "PigeonConsole", "PigeonWallet", "PigeonConfiguration", "PigeonStore", "PigeonHTTP", "SOAPCodec", "PigeonCore", "PigeonDomain", "PigeonDelivery", "PigeonTestSupport", "PigeonSimulator", "PigeonBankStub", "PigeonCrypto", "PushCore", "PigeonLDAP", "BankProxy", "OutboundHTTP", "PostgresDriver"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
