import Foundation
import PigeonCore
import PigeonDomain

/// The console's HTML: plain forms and tables, no script, one stylesheet. Every value from the
/// database, a phone or the bank goes through ``HTML/escape(_:)``.
package enum ConsolePages {
    package struct Context {
        var session: ConsoleSessions.Session
        var operatorName: String
        /// Whether the operator's role holds `right` (forms for the others are not shown).
        func may(_ right: ConsoleRole.Right) -> Bool { session.person.role.allows(right) }
    }

    package static func layout(title: String, session: ConsoleSessions.Session?, body: String) -> String {
        var navigation = ""
        if let session {
            navigation = """
                <nav aria-label="Console"><a href="/console">Overview</a> <a href="/console/notification">Notification</a> \
                <a href="/console/user">User</a> <a href="/console/outbox">Outbox</a> <a href="/console/audit">Audit</a>\
                \(session.person.role.allows(.configuration) ? " <a href=\"/console/config\">Configuration</a>" : "")
                <form method="post" action="/console/logout" class="inline">\(csrf(session))<button type="submit">Sign out \(HTML.escape(session.username)) (\(session.person.role.rawValue))</button></form></nav>
                """
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title)) · Pigeon console</title><link rel="stylesheet" href="/console/style.css"></head>
            <body><header><strong>Pigeon</strong> console</header>\(navigation)<main><h1>\(HTML.escape(title))</h1>
            \(body)</main></body></html>
            """
    }

    package static func csrf(_ session: ConsoleSessions.Session) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(session.csrfToken))\">"
    }

    package static func signIn(message: String?) -> String {
        layout(title: "Sign in", session: nil, body: """
            \(message.map { "<p class=\"error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? "")
            <form method="post" action="/console/login">
            <p><label for="username">Username</label><br><input id="username" name="username" autocomplete="username" required autofocus></p>
            <p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>
            <p><button type="submit">Sign in</button></p></form>
            """)
    }

    // MARK: Overview

    package static func overview(_ overview: ConsoleOverview, _ context: Context) -> String {
        let oldest = overview.oldestDueSeconds.map { $0 < 1 ? "none waiting" : String(format: "%.0f s", $0) } ?? "—"
        let whole = { (value: Double?) in value.map { String(Int($0)) } ?? "—" }
        let outbox = overview.outboxDepth.map { "\(Int($0)) (oldest \(String(format: "%.0f", overview.outboxOldestSeconds ?? 0)) s)" } ?? "—"
        var body = """
            <section><h2>Now</h2><table><tbody>
            <tr><th scope="row">Database</th><td class="\(overview.databaseUp ? "ok" : "bad")">\(HTML.escape(overview.database))</td></tr>
            <tr><th scope="row">Deliveries queued</th><td>\(whole(overview.queueDepth))</td></tr>
            <tr><th scope="row">Oldest due delivery waiting</th><td>\(oldest)</td></tr>
            <tr><th scope="row">Reports waiting for the bank</th><td>\(outbox)</td></tr>
            <tr><th scope="row">Dead reports</th><td><a href="/console/outbox">\(whole(overview.deadReports))</a></td></tr>
            \(certificateRows(overview.certificates, now: Date()))</tbody></table><p class="note">Sampled every 5 seconds, as in <code>/metrics</code>.</p></section>
            """
        body += "<section><h2>Push services</h2><table><thead><tr><th scope=\"col\">Service</th><th scope=\"col\">App</th><th scope=\"col\">Connections opened</th><th scope=\"col\">Pushes sent again after a reset</th></tr></thead><tbody>"
        for connection in overview.connections {
            body += "<tr><td>\(HTML.escape(connection.service))</td><td>\(HTML.escape(connection.app))</td><td>\(connection.opened)</td><td>\(connection.restarted)</td></tr>"
        }
        if overview.connections.isEmpty { body += "<tr><td colspan=\"4\">No push service is configured.</td></tr>" }
        body += "</tbody></table></section>"
        body += activity(overview.minutes)
        return layout(title: "Overview", session: context.session, body: body)
    }

    /// A row per HTTPS listener: when its certificate expires, marked under 14 days (as the
    /// PigeonCertificateExpiring alert).
    package static func certificateRows(_ certificates: [(listener: String, expiry: Date?)], now: Date) -> String {
        certificates.map { certificate in
            let name = HTML.escape(certificate.listener)
            guard let expiry = certificate.expiry else {
                return "<tr><th scope=\"row\">TLS certificate (\(name))</th><td class=\"bad\">unknown expiry</td></tr>"
            }
            let days = Int(expiry.timeIntervalSince(now) / 86_400)
            let text = expiry < now ? "expired \(HTML.date(expiry))" : "valid until \(HTML.date(expiry)) (\(days) days)"
            return "<tr><th scope=\"row\">TLS certificate (\(name))</th><td class=\"\(days < 14 ? "bad" : "ok")\">\(HTML.escape(text))</td></tr>"
        }.joined()
    }

    /// Pushes a minute over the last hour as bars (SVG, no script), and the hour's pushes by
    /// service and app and by outcome.
    package static func activity(_ minutes: [PushActivity.Minute]) -> String {
        let peak = max(1, minutes.map(\.total).max() ?? 1)
        let width = 600, height = 120
        let barWidth = Double(width) / Double(PushActivity.keptMinutes + 1)
        var bars = ""
        for (index, minute) in minutes.enumerated() {
            let barHeight = Double(height - 20) * minute.total / peak
            let x = Double(width) - Double(minutes.count - index) * barWidth
            bars += "<rect x=\"\(String(format: "%.1f", x))\" y=\"\(String(format: "%.1f", Double(height - 15) - barHeight))\" width=\"\(String(format: "%.1f", barWidth - 1))\" height=\"\(String(format: "%.1f", barHeight))\" fill=\"#3b6ea5\"><title>\(HTML.date(minute.start)): \(Int(minute.total)) pushes</title></rect>"
        }
        var byRoute: [String: Double] = [:], byOutcome: [String: Double] = [:]
        for minute in minutes {
            byRoute.merge(minute.byRoute, uniquingKeysWith: +)
            byOutcome.merge(minute.byOutcome, uniquingKeysWith: +)
        }
        let total = Int(minutes.reduce(0) { $0 + $1.total })
        var section = """
            <section><h2>Pushes in the last hour</h2>
            <svg role="img" aria-label="Pushes per minute over the last hour, \(total) in all" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <line x1="0" y1="\(height - 15)" x2="\(width)" y2="\(height - 15)" stroke="#888"/>\(bars)
            <text x="0" y="\(height - 2)" font-size="10">−60 min</text><text x="\(width - 30)" y="\(height - 2)" font-size="10">now</text>
            <text x="0" y="10" font-size="10">peak \(Int(peak))/min</text></svg>
            <table><thead><tr><th scope="col">Service / app</th><th scope="col">Pushes</th></tr></thead><tbody>
            """
        for (route, count) in byRoute.sorted(by: { $0.key < $1.key }) { section += "<tr><td>\(HTML.escape(route))</td><td>\(Int(count))</td></tr>" }
        if byRoute.isEmpty { section += "<tr><td colspan=\"2\">No pushes in the last hour.</td></tr>" }
        section += "</tbody></table><table><thead><tr><th scope=\"col\">Outcome</th><th scope=\"col\">Pushes</th></tr></thead><tbody>"
        for (outcome, count) in byOutcome.sorted(by: { $0.key < $1.key }) { section += "<tr><td>\(HTML.escape(outcome))</td><td>\(Int(count))</td></tr>" }
        return section + "</tbody></table></section>"
    }

    // MARK: Notification

    package static func notificationSearch(_ context: Context, message: String? = nil) -> String {
        layout(title: "Notification", session: context.session, body: """
            \(message.map { "<p class=\"error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? "")
            <form method="get" action="/console/notification"><p><label for="id">Notification id</label><br>
            <input id="id" name="id" required> <button type="submit">Find</button></p></form>
            """)
    }

    package static func notification(_ id: String, _ view: ConsoleNotificationView?, page: Int, reveal: Bool, _ context: Context) -> String {
        guard let view else { return notificationSearch(context, message: "No notification with id \(id).") }
        let notification = view.notification
        let content = notification.pushContent
        // CONTRACT §8: a confidential notification's content is for the phone alone — never
        // shown here, not even on request.
        let confidential = notification.isConfidential
        let reveal = reveal && !confidential
        let text = confidential
            ? (notification.contentErased ? "Confidential — the content was erased" : "Confidential — not shown")
            : reveal ? content.text : mask(content.text)
        var details = ""
        // Whether the page hides anything the operator could reveal.
        var masked = !confidential && !reveal && text != content.text
        for detail in content.details where !confidential {
            let value = reveal || content.type != .pinCode ? detail.value : mask(detail.value, everything: true)
            if value != detail.value { masked = true }
            details += "<tr><th scope=\"row\">\(HTML.escape(detail.key))</th><td>\(HTML.escape(value))</td></tr>"
        }
        var body = """
            <table><tbody>
            <tr><th scope="row">Id</th><td>\(HTML.escape(notification.id))</td></tr>
            <tr><th scope="row">Type</th><td>\(HTML.escape(content.type.rawValue))</td></tr>
            <tr><th scope="row">Text</th><td>\(HTML.escape(text))</td></tr>\(details)
            <tr><th scope="row">Sent</th><td>\(HTML.date(view.sentAt))</td></tr>
            <tr><th scope="row">Timeout</th><td>\(notification.timeoutSeconds) s</td></tr>
            <tr><th scope="row">Priority, perishable</th><td>\(notification.priority.map(String.init) ?? "—"), \(notification.perishable.map { $0 ? "yes" : "no" } ?? "—")</td></tr>
            </tbody></table>
            """
        if masked && context.may(.reveal) {
            body += """
                <form method="post" action="/console/notification/reveal">\(csrf(context.session))<input type="hidden" name="id" value="\(HTML.escape(id))">\
                <input type="hidden" name="page" value="\(page)"><button type="submit">Reveal the content (logged)</button></form>
                """
        }
        body += "<h2>Recipients (\(view.total))</h2><table><thead><tr><th scope=\"col\">User</th><th scope=\"col\">State</th><th scope=\"col\">Attempts</th><th scope=\"col\">Last error</th><th scope=\"col\">Updated</th></tr></thead><tbody>"
        for recipient in view.recipients {
            body += "<tr><td><a href=\"/console/user?user=\(HTML.query(recipient.user))\">\(HTML.escape(recipient.user))</a></td><td class=\"state\">\(HTML.escape(recipient.state))\(Self.toldEarly(recipient))</td><td>\(recipient.attempts)</td><td>\(HTML.escape(recipient.lastError ?? ""))</td><td>\(HTML.date(recipient.updatedAt))</td></tr>"
            // Which phone got it: each device's push, under its recipient.
            for device in recipient.devices {
                let service = device.serviceId.map { " · id \(HTML.escape($0))" } ?? ""
                body += "<tr class=\"device\"><td>↳ \(HTML.escape(device.deviceId)) (\(HTML.escape(device.platform)), \(HTML.escape(device.appId.isEmpty ? "default" : device.appId)), <span class=\"token\">\(HTML.escape(device.maskedToken))</span>)</td>"
                    + "<td class=\"device-state\">\(HTML.escape(device.state))\(acknowledged(device))</td><td>\(device.attempts)</td><td>\(HTML.escape(device.lastError ?? ""))\(service)</td><td>\(HTML.date(device.sentAt ?? device.updatedAt))</td></tr>"
            }
        }
        body += "</tbody></table>" + pager("/console/notification?id=\(HTML.query(id))", page: page, total: view.total)
        return layout(title: "Notification \(id)", session: context.session, body: body)
    }

    /// What the app on a device said about its push: received, opened (CONTRACT §10).
    private static func acknowledged(_ device: ConsoleRows.DeviceOutcome) -> String {
        var said: [String] = []
        if let delivered = device.deliveredAt { said.append("received \(HTML.date(delivered))") }
        if let opened = device.openedAt { said.append("opened \(HTML.date(opened))") }
        return said.isEmpty ? "" : "<br><span class=\"acknowledged\">\(said.joined(separator: ", "))</span>"
    }

    /// Hides what could be a one-time code: every run of four or more digits (or the whole value).
    package static func mask(_ text: String, everything: Bool = false) -> String {
        if everything { return String(repeating: "•", count: min(8, max(4, text.count))) }
        var masked = "", digits = ""
        for character in text {
            if character.isNumber {
                digits.append(character)
                continue
            }
            masked += digits.count >= 4 ? String(repeating: "•", count: digits.count) : digits
            digits = ""
            masked.append(character)
        }
        return masked + (digits.count >= 4 ? String(repeating: "•", count: digits.count) : digits)
    }

    // MARK: User

    package static func user(_ user: String, _ view: ConsoleUserView?, message: String?, _ context: Context) -> String {
        var body = """
            \(message.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? "")
            <form method="get" action="/console/user"><p><label for="user">User id</label><br>
            <input id="user" name="user" value="\(HTML.escape(user))" required> <button type="submit">Find</button></p></form>
            """
        guard let view else { return layout(title: "User", session: context.session, body: body) }
        body += "<h2>Devices (\(view.devices.count))</h2><table><thead><tr><th scope=\"col\">Device</th><th scope=\"col\">Platform</th><th scope=\"col\">App</th><th scope=\"col\">Push token</th><th scope=\"col\">Encryption key</th><th scope=\"col\">Registered</th><th scope=\"col\">Last success</th><th scope=\"col\">Revoke</th></tr></thead><tbody>"
        for device in view.devices {
            body += """
                <tr><td>\(HTML.escape(device.deviceId)) (\(HTML.escape(device.bankClientId)))</td><td>\(HTML.escape(device.platform))\(device.environment == "sandbox" ? " (sandbox)" : "")</td>\
                <td>\(HTML.escape(device.appId.isEmpty ? "default" : device.appId))</td><td class="token">\(HTML.escape(Redaction.token(device.pushToken)))</td>\
                <td>\(device.encryptionKeyId.map { "yes, " + HTML.escape($0) } ?? "none")</td><td>\(HTML.date(device.registeredAt))</td><td>\(HTML.date(device.reachedAt))</td>\
                <td>\(context.may(.revoke) ? revokeForm(device, user: user, context) : "—")</td></tr>
                """
        }
        if view.devices.isEmpty { body += "<tr><td colspan=\"8\">No subscribed device.</td></tr>" }
        let testPush = view.devices.isEmpty || !context.may(.testPush) ? "" : """
            <form method="post" action="/console/user/test-push">\(csrf(context.session))<input type="hidden" name="user" value="\(HTML.escape(user))">\
            <button type="submit">Send a test push to these devices (logged)</button></form>
            """
        body += "</tbody></table>" + testPush + "<h2>Removed devices (\(view.removed.count))</h2><table><thead><tr><th scope=\"col\">Device</th><th scope=\"col\">Platform</th><th scope=\"col\">App</th><th scope=\"col\">Push token</th><th scope=\"col\">Removed</th><th scope=\"col\">Why</th></tr></thead><tbody>"
        for device in view.removed {
            body += "<tr><td>\(HTML.escape(device.deviceId))</td><td>\(HTML.escape(device.platform))</td><td>\(HTML.escape(device.appId.isEmpty ? "default" : device.appId))</td>"
                + "<td class=\"token\">\(HTML.escape(device.maskedToken))</td><td>\(HTML.date(device.removedAt))</td><td>\(HTML.escape(device.reason))</td></tr>"
        }
        if view.removed.isEmpty { body += "<tr><td colspan=\"6\">None removed.</td></tr>" }
        body += "</tbody></table><h2>Waiting for an SMS code (\(view.pending.count))</h2><table><thead><tr><th scope=\"col\">Device</th><th scope=\"col\">Platform</th><th scope=\"col\">Since</th></tr></thead><tbody>"
        for pending in view.pending {
            body += "<tr><td>\(HTML.escape(pending.deviceId)) (\(HTML.escape(pending.bankClientId)))</td><td>\(HTML.escape(pending.platform))</td><td>\(HTML.date(pending.createdAt))</td></tr>"
        }
        body += "</tbody></table><h2>Recent notifications</h2><table><thead><tr><th scope=\"col\">Notification</th><th scope=\"col\">Sent</th><th scope=\"col\">State</th><th scope=\"col\">Attempts</th><th scope=\"col\">Updated</th></tr></thead><tbody>"
        for notification in view.recent {
            body += "<tr><td><a href=\"/console/notification?id=\(HTML.query(notification.notificationId))\">\(HTML.escape(notification.notificationId))</a></td><td>\(HTML.date(notification.sentAt))</td><td>\(HTML.escape(notification.state))</td><td>\(notification.attempts)</td><td>\(HTML.date(notification.updatedAt))</td></tr>"
        }
        if view.recent.isEmpty { body += "<tr><td colspan=\"5\">None kept (notifications are kept retentionDays).</td></tr>" }
        return layout(title: "User \(user)", session: context.session, body: body + "</tbody></table>")
    }

    private static func revokeForm(_ device: ConsoleRows.DeviceSummary, user: String, _ context: Context) -> String {
        """
        <form method="post" action="/console/device/revoke">\(csrf(context.session))<input type="hidden" name="device" value="\(device.id)">\
        <input type="hidden" name="user" value="\(HTML.escape(user))"><label for="reason-\(device.id)">Reason</label> \
        <input id="reason-\(device.id)" name="reason" maxlength="200" required> <button type="submit">Revoke</button></form>
        """
    }

    // MARK: Audit

    /// The audit trail, newest first, a page at a time.
    package static func audit(_ entries: [AuditEntry], page: Int, _ context: Context) -> String {
        var body = """
            <p class="note">Every sign-in and every reveal, revoke, re-queue, test push and <code>pigeon outbox retry</code>, kept auditRetentionDays. Nothing revealed is written here.</p>
            <table><thead><tr><th scope="col">When</th><th scope="col">Operator</th><th scope="col">Role</th><th scope="col">Address</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Reason</th><th scope="col">Outcome</th></tr></thead><tbody>
            """
        for entry in entries {
            body += "<tr><td>\(HTML.date(entry.at))</td><td>\(HTML.escape(entry.operatorName))</td><td>\(HTML.escape(entry.role))</td><td>\(HTML.escape(entry.address))</td>"
                + "<td class=\"action\">\(HTML.escape(entry.action.rawValue))</td><td>\(HTML.escape(entry.target))</td><td>\(HTML.escape(entry.reason))</td><td>\(HTML.escape(entry.outcome))</td></tr>"
        }
        if entries.isEmpty { body += "<tr><td colspan=\"8\">No entries\(page > 1 ? " on this page" : "").</td></tr>" }
        body += "</tbody></table>"
        if page > 1 { body += "<a href=\"/console/audit?page=\(page - 1)\">Newer</a> " }
        if entries.count == ConsolePaging.pageSize { body += "<a href=\"/console/audit?page=\(page + 1)\">Older</a>" }
        return layout(title: "Audit", session: context.session, body: body)
    }

    // MARK: Outbox

    /// A recipient the bank was told at once reached nobody (CONTRACT §10): when.
    private static func toldEarly(_ recipient: ConsoleRows.Recipient) -> String {
        guard let told = recipient.reportedEarlyAt else { return "" }
        return "<br><small>bank told at once: reached nobody, \(HTML.date(told))</small>"
    }

    package static func outbox(_ view: ConsoleOutboxView, message: String?, _ context: Context) -> String {
        var body = message.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? ""
        body += "<h2>Waiting (\(view.total))</h2><table><thead><tr><th scope=\"col\">Id</th><th scope=\"col\">Report</th><th scope=\"col\">About</th><th scope=\"col\">Attempts</th><th scope=\"col\">Next attempt</th><th scope=\"col\">Last error</th></tr></thead><tbody>"
        for report in view.waiting {
            body += "<tr><td>\(report.id)</td><td>\(HTML.escape(report.kind))</td><td>\(HTML.escape(report.subject)) — \(HTML.escape(report.concerned.prefix(5).joined(separator: ", ")))</td><td>\(report.attempts)</td><td>\(HTML.date(report.nextAttemptAt))</td><td>\(HTML.escape(report.lastError ?? ""))</td></tr>"
        }
        body += "</tbody></table>" + pager("/console/outbox?x=1", page: view.page, total: view.total)
        body += "<h2>Dead letters (\(view.dead.count))</h2><table><thead><tr><th scope=\"col\">Id</th><th scope=\"col\">Report</th><th scope=\"col\">About</th><th scope=\"col\">Attempts</th><th scope=\"col\">Died</th><th scope=\"col\">Last error</th><th scope=\"col\">Send again</th></tr></thead><tbody>"
        for report in view.dead {
            body += """
                <tr><td>\(report.id)</td><td>\(HTML.escape(report.reason?.label(kind: report.kind) ?? report.kind))</td><td>\(HTML.escape(report.notificationId)) — \(HTML.escape(report.users.prefix(5).joined(separator: ", ")))</td>\
                <td>\(report.attempts)</td><td>\(HTML.date(report.diedAt))</td><td>\(HTML.escape(report.lastError ?? ""))</td>\
                <td>\(context.may(.requeue) ? requeueForm(report.id, context) : "—")</td></tr>
                """
        }
        return layout(title: "Outbox", session: context.session, body: body + "</tbody></table>")
    }

    private static func requeueForm(_ id: Int64, _ context: Context) -> String {
        """
        <form method="post" action="/console/outbox/requeue">\(csrf(context.session))<input type="hidden" name="id" value="\(id)">\
        <button type="submit" aria-label="Send report \(id) again">Re-queue</button></form>
        """
    }

    // MARK: Configuration

    package static func configuration(_ settings: [(key: String, value: String)], _ context: Context) -> String {
        var body = "<p>The configuration this process runs with; secrets are shown as <code>\(HTML.escape(Redaction.secret))</code>.</p><table><tbody>"
        for (key, value) in settings { body += "<tr><th scope=\"row\">\(HTML.escape(key))</th><td>\(HTML.escape(value))</td></tr>" }
        return layout(title: "Configuration", session: context.session, body: body + "</tbody></table>")
    }

    package static func pager(_ base: String, page: Int, total: Int) -> String {
        let pages = max(1, (total + ConsolePaging.pageSize - 1) / ConsolePaging.pageSize)
        guard pages > 1 else { return "" }
        var links = "<nav aria-label=\"Pages\" class=\"pager\">Page \(page) of \(pages)"
        if page > 1 { links += " <a href=\"\(base)&amp;page=\(page - 1)\">previous</a>" }
        if page < pages { links += " <a href=\"\(base)&amp;page=\(page + 1)\">next</a>" }
        return links + "</nav>"
    }

    package static let style = """
        body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
        header{background:#22313f;color:#fff;padding:.6em 1em}
        nav{padding:.5em 1em;background:#e8edf2}nav a{margin-right:1em}
        main{padding:0 1em 2em;max-width:1200px}
        table{border-collapse:collapse;margin:.5em 0 1em;background:#fff}
        th,td{border:1px solid #ccd;padding:.3em .6em;text-align:left;vertical-align:top}
        th{background:#f0f3f6}
        .inline{display:inline;margin-left:1em}
        .error{color:#a00}.notice{color:#064}.ok{color:#064}.bad{color:#a00}
        .token{font-family:monospace}
        a:focus,button:focus,input:focus{outline:3px solid #f0a000}
        """
}
