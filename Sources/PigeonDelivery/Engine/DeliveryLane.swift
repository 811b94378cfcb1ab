import PigeonDomain

/// One lane of the delivery engine: the priorities it claims, how much at a time, the pushes it
/// may have in flight, its claim loops and its senders. The urgent lane has senders of its own
/// (their own connections) and is woken when a send is stored; the other lane polls.
struct DeliveryLane: Sendable {
    var name: String
    var band: PriorityBand
    var batchSize: Int
    /// Pushes in flight, shared by the lane's batches.
    var window: Int
    var workers: Int
    var senders: [PushRoute: any PushSending]
    /// Where the lane claims, looks up and hands back (the urgent lane's may be a pool of its own).
    var stores: LaneStores
    /// How long its claims are held: a process that dies holding some delays them by this.
    var lease: Duration
    /// Bounds the deliveries the lane holds claimed and undecided: its window plus a batch.
    var allowance: ClaimAllowance
    /// Keeps a slow push service from holding the lane's room.
    var holds: RouteHolds
    /// Ends the lane's idle waits early; `nil`: it polls.
    var wake: WakeSignal?

    init(name: String, band: PriorityBand, batchSize: Int, window: Int, workers: Int, senders: [PushRoute: any PushSending],
         stores: LaneStores, lease: Duration, slowAfter: Duration, wake: WakeSignal? = nil) {
        self.stores = stores
        self.lease = lease
        self.name = name
        self.band = band
        self.batchSize = batchSize
        self.window = window
        self.workers = max(1, workers)
        self.senders = senders
        allowance = ClaimAllowance(inFlight: window, batchSize: batchSize)
        holds = RouteHolds(cap: window, slowAfter: slowAfter)
        self.wake = wake
    }
}

/// The database seams one lane of the engine claims, looks up and hands back through.
package struct LaneStores: Sendable {
    package var queue: any DeliveryQueueing
    package var notifications: any NotificationSource
    package var devices: any DeviceDirectory

    package init(queue: any DeliveryQueueing, notifications: any NotificationSource, devices: any DeviceDirectory) {
        self.queue = queue
        self.notifications = notifications
        self.devices = devices
    }
}
