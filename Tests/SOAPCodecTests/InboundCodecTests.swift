import BankContract
import Foundation
@testable import SOAPCodec
import Testing
import PigeonTestSupport

@Suite("Inbound SOAP codec", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct InboundCodecTests {
    let codec = SOAPCodec(service: InboundService.description)

    static let notification = """
        <notification>
          <details><entry><key>name</key><value>Заголовок</value></entry><entry><key>Период</key><value>3 года</value></entry></details>
          <id>push-1</id>
          <pushContent><badge>3</badge><details><entry><key>target</key><value>4242</value></entry></details>
            <sound>default</sound><text>Code 4242 &amp; more</text><type>PIN_CODE</type></pushContent>
          <recipients>u1</recipients><recipients>u2</recipients>
          <timeout>60</timeout>
          <priority>5</priority>
          <perishable>true</perishable>
        </notification>
        """

    func envelope(_ body: String, soap12: Bool = false) -> Data {
        let namespace = soap12 ? "http://www.w3.org/2003/05/soap-envelope" : "http://schemas.xmlsoap.org/soap/envelope/"
        return Data("<s:Envelope xmlns:s=\"\(namespace)\"><s:Header/><s:Body>\(body)</s:Body></s:Envelope>".utf8)
    }

    @Test("a qualified wrapper with unqualified children decodes fully")
    func qualifiedWrapper() throws {
        let body = "<ns2:sendNotification xmlns:ns2=\"\(InboundService.namespace)\">\(Self.notification)</ns2:sendNotification>"
        let request = try codec.decodeRequest(envelope(body), contentType: "text/xml")
        #expect(request.version == .soap11)
        #expect(request.operation.name == "sendNotification")
        let message = try NotificationMessage(sendNotification: request)
        #expect(message.id == "push-1")
        #expect(message.recipients == ["u1", "u2"])
        #expect(message.timeout == 60)
        #expect(message.priority == 5)
        #expect(message.perishable == true)
        #expect(message.pushContent.text == "Code 4242 & more")
        #expect(message.pushContent.type == "PIN_CODE")
        #expect(message.pushContent.details == [MapEntry(key: "target", value: "4242")])
        #expect(message.details?.last == MapEntry(key: "Период", value: "3 года"))
    }

    @Test("the seed-style bare wrapper and SOAP 1.2 are accepted")
    func bareWrapperSOAP12() throws {
        let request = try codec.decodeRequest(envelope("<sendNotification>\(Self.notification)</sendNotification>", soap12: true), contentType: "application/soap+xml")
        #expect(request.version == .soap12)
        #expect(request.parameters.record("notification")?.string("id") == "push-1")
    }

    @Test("children qualified with the service namespace are accepted")
    func qualifiedChildren() throws {
        let body = "<p:getDeliveryStatus xmlns:p=\"\(InboundService.namespace)\"><p:id>abc</p:id></p:getDeliveryStatus>"
        let request = try codec.decodeRequest(envelope(body), contentType: nil)
        #expect(request.parameters.string("id") == "abc")
    }

    @Test("faults name the offending field", arguments: [
        ("<sendNotification><notification><id>x</id><pushContent><text>t</text><type>URL</type></pushContent><recipients>u</recipients><timeout>abc</timeout></notification></sendNotification>",
         "element 'notification/timeout' must be an int, got 'abc'"),
        ("<sendNotification><notification><id>x</id><pushContent><text>t</text><type>URL</type></pushContent><timeout>5</timeout></notification></sendNotification>",
         "missing required element 'notification/recipients'"),
        ("<sendNotification><notification><id>x</id><pushContent><text>t</text><type>NOPE</type></pushContent><recipients>u</recipients><timeout>5</timeout></notification></sendNotification>",
         "element 'notification/pushContent/type' must be one of"),
        ("<sendNotification><notification><id>x</id><pushContent><text>t</text><type>URL</type></pushContent><recipients>u</recipients><timeout>5</timeout><perishable>maybe</perishable></notification></sendNotification>",
         "element 'notification/perishable' must be a boolean"),
        ("<sendNotification><notification><id>x</id><id>y</id><pushContent><text>t</text><type>URL</type></pushContent><recipients>u</recipients><timeout>5</timeout></notification></sendNotification>",
         "element 'notification/id' appears 2 times but may appear once"),
        ("<launchMissiles/>", "unknown operation 'launchMissiles'"),
        ("<getDeliveryStatus><id>\(String(repeating: "x", count: 300))</id></getDeliveryStatus>", "element 'id' is longer than 256 characters"),
    ])
    func faults(body: String, expected: String) {
        #expect {
            try codec.decodeRequest(envelope(body), contentType: "text/xml")
        } throws: { error in
            guard let error = error as? SOAPRequestError else { return false }
            return error.fault.code == .client && error.fault.reason.contains(expected)
        }
    }

    @Test("recipients are read into a list, not the tree: in document order, nil ones left out, checked like elements")
    func streamedRecipients() throws {
        let body = "<sendNotification><notification><recipients>r1</recipients><id>x</id><recipients>r&amp;2</recipients>"
            + "<pushContent><text>t</text><type>URL</type></pushContent><recipients xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:nil=\"true\"/>"
            + "<recipients><![CDATA[r<3>]]></recipients><timeout>5</timeout></notification></sendNotification>"
        let request = try codec.decodeRequest(envelope(body), contentType: nil)
        #expect(request.streamedList == ["r1", "r&2", "r<3>"])
        #expect(request.parameters.record("notification")?.fields["recipients"] == nil)
        #expect(try NotificationMessage(sendNotification: request).recipients == ["r1", "r&2", "r<3>"])
        let other = try codec.decodeRequest(envelope("<getDeliveryStatus><id>abc</id></getDeliveryStatus>"), contentType: nil)
        #expect(other.streamedList.isEmpty)
        for (recipients, expected) in [
            ("<recipients>\(String(repeating: "x", count: 257))</recipients>", "element 'notification/recipients' is longer than 256 characters"),
            ("<recipients>u<b>bold</b></recipients>", "element 'notification/recipients' must contain text only, found element 'b'"),
        ] {
            let bad = "<sendNotification><notification><id>x</id><pushContent><text>t</text><type>URL</type></pushContent>\(recipients)<timeout>5</timeout></notification></sendNotification>"
            #expect {
                try codec.decodeRequest(envelope(bad), contentType: nil)
            } throws: { error in
                (error as? SOAPRequestError)?.fault.reason.contains(expected) ?? false
            }
        }
    }

    @Test("a non-positive or absurdly long timeout and an empty recipient are refused, the fault naming the element")
    func semanticChecks() throws {
        for (timeout, recipient, expected) in [
            ("0", "u", "'notification/timeout' must be a positive"), ("-5", "u", "'notification/timeout' must be a positive"),
            ("31536001", "u", "'notification/timeout' must be at most 31536000 seconds"), ("5", "", "recipients' number 1 is empty"),
        ] {
            let body = "<sendNotification><notification><id>x</id><pushContent><text>t</text><type>URL</type></pushContent><recipients>\(recipient)</recipients><timeout>\(timeout)</timeout></notification></sendNotification>"
            let request = try codec.decodeRequest(envelope(body), contentType: nil)
            #expect {
                try NotificationMessage(sendNotification: request)
            } throws: { error in
                (error as? SOAPFault)?.reason.contains(expected) ?? false
            }
        }
    }

    @Test("a non-envelope root and an empty body are client faults")
    func notAnEnvelope() {
        #expect(throws: SOAPRequestError.self) { try codec.decodeRequest(Data("<sendNotification/>".utf8), contentType: nil) }
        #expect(throws: SOAPRequestError.self) { try codec.decodeRequest(envelope(""), contentType: nil) }
        #expect(throws: SOAPRequestError.self) { try codec.decodeRequest(Data(), contentType: nil) }
    }

    @Test("responses use a qualified wrapper, unqualified children in sequence order")
    func responseShape() {
        let result = InboundResult(status: .ok).with(deliveryStatus: [("u1", "QUEUED"), ("u<2>", "INVALID_SUBSCRIPTION")])
        let xml = String(decoding: codec.encodeResponse(InboundService.sendNotification, result: result.record, version: .soap11), as: UTF8.self)
        #expect(xml.contains("<ns2:sendNotificationResponse xmlns:ns2=\"http://inbound.sbi.pigeon.idamobile.com/\"><return><status>OK</status><deliveryStatus><entry><key>u1</key><value>QUEUED</value></entry><entry><key>u&lt;2&gt;</key>"))
        let failed = InboundResult(status: .entityNotFound, errorMessage: "gone")
        let xml2 = String(decoding: codec.encodeResponse(InboundService.getDeliveryStatus, result: failed.record, version: .soap12), as: UTF8.self)
        #expect(xml2.contains("<return><status>ENTITY_NOT_FOUND</status><errorMessage>gone</errorMessage></return>"))
        #expect(xml2.contains("http://www.w3.org/2003/05/soap-envelope"))
    }

    @Test("a notification survives encode → decode unchanged")
    func roundTrip() throws {
        let original = NotificationMessage(
            details: [MapEntry(key: "fxAmount", value: "100000"), MapEntry(key: "x", value: "")], id: "id-1", perishable: nil, priority: 7,
            pushContent: PushContentMessage(badge: nil, details: [], sound: nil, text: "a\r\nb & <c>", type: "URL"),
            recipients: ["a", "b"], timeout: 30)
        let data = codec.encodeRequest(InboundService.sendNotification, parameters: SOAPRecord(["notification": [.record(original.record)]]))
        let decoded = try codec.decodeRequest(data, contentType: nil)
        let message = try NotificationMessage(sendNotification: decoded)
        #expect(message == original)
    }

    @Test("faults in both versions")
    func faultEncoding() {
        let soap11 = String(decoding: codec.encodeFault(.client("bad <x>"), version: .soap11), as: UTF8.self)
        #expect(soap11.contains("<faultcode>soap:Client</faultcode><faultstring>bad &lt;x&gt;</faultstring>"))
        let soap12 = String(decoding: codec.encodeFault(.server("oops"), version: .soap12), as: UTF8.self)
        #expect(soap12.contains("<soap:Value>soap:Receiver</soap:Value>"))
    }

    @Test("responses decode back, and remote faults surface their reason")
    func responseDecoding() throws {
        let result = InboundResult(status: .ok).with(exists: [true, false])
        let data = codec.encodeResponse(InboundService.checkSubscriptionExists, result: result.record, version: .soap11)
        let decoded = try codec.decodeResponse(data, for: InboundService.checkSubscriptionExists)
        #expect(decoded.fields["exists"] == [.boolean(true), .boolean(false)])
        let fault = codec.encodeFault(.client("nope"), version: .soap11)
        #expect(throws: SOAPFault.server("nope")) { try codec.decodeResponse(fault, for: InboundService.checkSubscriptionExists) }
    }
}

@Suite("Bank answers in either shape", .timeLimit(.minutes(TestTier.unitTestMinutes)))
struct BankAnswerShapeTests {
    @Test("a one-field result is read from its named child or directly from return")
    func bareReturn() throws {
        let codec = SOAPCodec(service: OutboundService.description)
        func envelope(_ inner: String) -> Data {
            Data("<S:Envelope xmlns:S=\"http://schemas.xmlsoap.org/soap/envelope/\"><S:Body><ns2:checkSubscriptionAuthorizedResponse xmlns:ns2=\"http://outbound.sbi.pigeon.idamobile.com/\">\(inner)</ns2:checkSubscriptionAuthorizedResponse></S:Body></S:Envelope>".utf8)
        }
        for inner in ["<return><authorized>true</authorized></return>", "<return>true</return>", "<return> true </return>"] {
            let record = try codec.decodeResponse(envelope(inner), for: OutboundService.checkSubscriptionAuthorized)
            #expect(record.boolean("authorized") == true, "\(inner)")
        }
        #expect(throws: SOAPFault.self) { try codec.decodeResponse(envelope("<return>maybe</return>"), for: OutboundService.checkSubscriptionAuthorized) }
    }

    @Test("a send's answer is sized before it is written: the estimate is the encoded record's size, within a few bytes per field")
    func answerSizeEstimate() {
        let states = (0..<10_000).map { (user: "user-\($0)", state: $0 % 3 == 0 ? "INVALID_SUBSCRIPTION" : "QUEUED") }
        let result = InboundResult(status: .ok).with(deliveryStatus: states)
        let record = SOAPRecord(["return": [.record(result.record)]])
        let body = DocumentWriter()
        SchemaEncoder().encode(record, as: InboundService.sendNotification.response, into: body)
        let written = body.take().count
        let estimate = SchemaEncoder.sizeEstimate(record)
        #expect(estimate >= written - 64 && estimate <= written + 64, "estimate \(estimate), written \(written)")
    }
}
