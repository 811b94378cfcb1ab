import Foundation

/// Connections opened and transfers restarted per push service and app, summed over the service's
/// clients (`pushThreads` of them, and the urgent lane's under its own name), in the clients'
/// order: what `/metrics` and the console show.
package struct PushClientCounts {
    package var service: String
    package var app: String
    package var opened: Int
    package var restarted: Int

    package static func summed(_ clients: [(service: String, app: String, client: HTTP2Client)]) -> [PushClientCounts] {
        var rows: [PushClientCounts] = []
        for (service, app, client) in clients {
            if let index = rows.firstIndex(where: { $0.service == service && $0.app == app }) {
                rows[index].opened += client.connectionsOpened
                rows[index].restarted += client.transfersRestarted
            } else {
                rows.append(PushClientCounts(service: service, app: app, opened: client.connectionsOpened, restarted: client.transfersRestarted))
            }
        }
        return rows
    }
}
