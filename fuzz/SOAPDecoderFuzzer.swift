// libFuzzer entry point for the inbound SOAP decoder: any byte string must come back as a decoded
// request or a SOAP fault, never a crash, hang or unbounded allocation. Built by fuzz/run.sh.
import Foundation

private let codec = SOAPCodec(service: InboundService.description)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    do {
        let request = try codec.decodeRequest(data, contentType: nil)
        if let record = request.parameters.record("notification") {
            _ = try? NotificationMessage(record: record)
        }
        // Whatever decoded must encode again.
        _ = codec.encodeRequest(request.operation, parameters: request.parameters, version: request.version)
    } catch {
        _ = codec.encodeFault(error.fault, version: error.version)
    }
    return 0
}
