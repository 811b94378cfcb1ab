import Foundation

/// What sending a notification did.
package enum SendOutcome: Sendable, Equatable {
    /// Stored now; one state per (unique) recipient, in the order sent, and the moment its
    /// deliveries expire (exactly as stored).
    case stored([RecipientState], expiresAt: Date)
    /// The id was used before; nothing was stored, these are the first send's current states.
    case duplicate([RecipientState])

    /// The recipients' states when the send was stored now; `nil` for a repeated id.
    package var stored: [RecipientState]? {
        if case .stored(let states, _) = self { return states }
        return nil
    }
}
