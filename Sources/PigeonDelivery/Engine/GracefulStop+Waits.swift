import PigeonCore

extension GracefulStop {
    /// Waits `duration` on `clock`, or until the stop is requested (or the task is cancelled).
    func sleep(for duration: Duration, on clock: any DeliveryClock) async {
        await interrupting { try? await clock.sleep(for: duration) }
    }

    /// Waits until `wake` is signalled or `duration` has passed on `clock`, or until the stop is
    /// requested (or the task is cancelled).
    func wait(for wake: WakeSignal, upTo duration: Duration, on clock: any DeliveryClock) async {
        await interrupting { await wake.wait(upTo: duration, clock: clock) }
    }
}
