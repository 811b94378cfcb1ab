/// Every metric the gateway exports, defined once: its name, type and help text. Code records
/// through these handles (``MetricsRegistry/increment(_:labels:by:)`` takes a ``Metric``, never a
/// string), so a name cannot be misspelt in one place, the console reads back what the engine
/// writes, and a test checks the dashboard and the alert rules against ``catalogue``.
extension Metric {
    /// `pigeon_http_requests_total`
    package static let httpRequestsTotal = Metric("pigeon_http_requests_total", .counter, "HTTP requests by route template, method and status.")
    /// `pigeon_http_request_duration_seconds`
    package static let httpRequestDurationSeconds = Metric("pigeon_http_request_duration_seconds", .histogram, "HTTP request latency by route template.")
    /// `pigeon_soap_calls_total`
    package static let soapCallsTotal = Metric("pigeon_soap_calls_total", .counter, "SOAP operations by business status.")
    /// `pigeon_soap_sign_in_failures_total`
    package static let soapSignInFailuresTotal = Metric("pigeon_soap_sign_in_failures_total", .counter, "SOAP calls without the right Basic credentials, by reason (no_credentials: a challenge asked for, not counted against the client; wrong_credentials; limited: past 10 a minute for that user and address, answered 429).")
    /// `pigeon_http_unauthenticated_evictions`
    package static let httpUnauthenticatedEvictions = Metric("pigeon_http_unauthenticated_evictions", .gauge, "Unauthenticated connections cut to make room for a new one (of the new one's address at its cap, or of the address holding the most; one that sent wrong credentials first, then the oldest), since start.")
    /// `pigeon_http_unauthenticated_connections`
    package static let httpUnauthenticatedConnections = Metric("pigeon_http_unauthenticated_connections", .gauge, "Open connections per listener that have not authenticated (no accepted client certificate, no SOAP call with the bank's credentials).")
    /// `pigeon_http_allowlist_refusals`
    package static let httpAllowlistRefusals = Metric("pigeon_http_allowlist_refusals", .gauge, "Connections refused because their address is not in bankAllowedClients, since start.")
    /// `pigeon_db_pool_connections`
    package static let databasePoolConnections = Metric("pigeon_db_pool_connections", .gauge, "Connections of each database pool (main, devices, engine, urgent).")
    /// `pigeon_db_pool_busy`
    package static let databasePoolBusy = Metric("pigeon_db_pool_busy", .gauge, "Connections of each database pool running a query now.")
    /// `pigeon_db_pool_waiting`
    package static let databasePoolWaiting = Metric("pigeon_db_pool_waiting", .gauge, "Queries waiting for a connection of each database pool.")
    /// `pigeon_db_pool_overloaded`
    package static let databasePoolOverloaded = Metric("pigeon_db_pool_overloaded", .gauge, "Queries refused since start because too many were waiting for a connection of the pool.")
    /// `pigeon_db_pool_queries`
    package static let databasePoolQueries = Metric("pigeon_db_pool_queries", .gauge, "Queries (jobs) a connection of the pool started, since start.")
    /// `pigeon_db_pool_wait_seconds`
    package static let databasePoolWaitSeconds = Metric("pigeon_db_pool_wait_seconds", .gauge, "Seconds those queries waited for a connection of the pool, in all, since start (divide its rate by pigeon_db_pool_queries' for the mean wait).")
    /// `pigeon_soap_faults_total`
    package static let soapFaultsTotal = Metric("pigeon_soap_faults_total", .counter, "SOAP requests answered with a fault.")
    /// `pigeon_push_outcomes_total`
    package static let pushOutcomesTotal = Metric("pigeon_push_outcomes_total", .counter, "Push attempts by platform, app and outcome.")
    /// `pigeon_push_duration_seconds`
    package static let pushDurationSeconds = Metric("pigeon_push_duration_seconds", .histogram, "Push request latency by platform and app.")
    /// `pigeon_deliveries_total`
    package static let deliveriesTotal = Metric("pigeon_deliveries_total", .counter, "Delivery outcomes recorded by the engine, by state.")
    /// `pigeon_deliveries_handed_back_total`
    package static let deliveriesHandedBackTotal = Metric("pigeon_deliveries_handed_back_total", .counter, "Deliveries given back to the queue unpushed because their push service was slow, by lane.")
    /// `pigeon_outcomes_not_written_total`
    package static let outcomesNotWrittenTotal = Metric("pigeon_outcomes_not_written_total", .counter, "Push outcomes the queue did not take: the delivery was acknowledged or expired while its push was in flight, or its lease had ended (a delivery whose lease ended is pushed again).")
    /// `pigeon_apns_provider_tokens_signed_total`
    package static let apnsProviderTokensSignedTotal = Metric("pigeon_apns_provider_tokens_signed_total", .counter, "APNs provider tokens signed, by reason (first, refresh, rejected).")
    /// `pigeon_apns_provider_token_rejections_total`
    package static let apnsProviderTokenRejectionsTotal = Metric("pigeon_apns_provider_token_rejections_total", .counter, "Pushes APNs refused for their provider token, by reason.")
    /// `pigeon_apns_provider_token_throttled_total`
    package static let apnsProviderTokenThrottledTotal = Metric("pigeon_apns_provider_token_throttled_total", .counter, "TooManyProviderTokenUpdates answers that paused token signing.")
    /// `pigeon_apns_key_restrictions_total`
    package static let apnsKeyRestrictionsTotal = Metric("pigeon_apns_key_restrictions_total", .counter, "Pushes APNs refused because the app's key is restricted to another environment or topic (UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken), by app and reason: a configuration error, devices kept.")
    /// `pigeon_push_retries_total`
    package static let pushRetriesTotal = Metric("pigeon_push_retries_total", .counter, "Push attempts to be retried, by platform, app and cause (connection, throttled, credentials, unavailable).")
    /// `pigeon_push_credentials_refused_total`
    package static let pushCredentialsRefusedTotal = Metric("pigeon_push_credentials_refused_total", .counter, "Pushes a service refused for our static credentials (RuStore's service token), by service and app.")
    /// `pigeon_device_registrations_total`
    package static let deviceRegistrationsTotal = Metric("pigeon_device_registrations_total", .counter, "Device registrations and verifications by result (subscribed, refreshed, verification_required, verified, refused, bank_unavailable, bank_invalid_answer).")
    /// `pigeon_build_info`
    package static let buildInfo = Metric("pigeon_build_info", .gauge, "1, labelled with the running binary's version and commit.")
    /// `pigeon_confidential_pushes_total`
    package static let confidentialPushesTotal = Metric("pigeon_confidential_pushes_total", .counter, "Pushes of confidential notifications by push service and mode (encrypted to the device's key, or fetch).")
    /// `pigeon_confidential_contents_erased_total`
    package static let confidentialContentsErasedTotal = Metric("pigeon_confidential_contents_erased_total", .counter, "Confidential notifications whose content was erased from storage, by reason (final, expired).")
    /// `pigeon_pass_updates_total`
    package static let passUpdatesTotal = Metric("pigeon_pass_updates_total", .counter, "Pass versions stored by updatePass.")
    /// `pigeon_pass_registrations_total`
    package static let passRegistrationsTotal = Metric("pigeon_pass_registrations_total", .counter, "Wallet registrations by result (created, known, unauthorized, limit).")
    /// `pigeon_pass_fetches_total`
    package static let passFetchesTotal = Metric("pigeon_pass_fetches_total", .counter, "Pass downloads by result (pass, not_modified).")
    /// `pigeon_bank_reports_total`
    package static let bankReportsTotal = Metric("pigeon_bank_reports_total", .counter, "Reports sent to the bank proxy, by kind and result (sent, retry, dead); expiry reports also by reason (timeout, reached_nobody: told at once that no device could be reached).")
    /// `pigeon_http_connections`
    package static let httpConnections = Metric("pigeon_http_connections", .gauge, "Open connections per listener.")
    /// `pigeon_http_requests_in_flight`
    package static let httpRequestsInFlight = Metric("pigeon_http_requests_in_flight", .gauge, "Requests whose handler is running, per listener.")
    /// `pigeon_http_deadline_closures`
    package static let httpDeadlineClosures = Metric("pigeon_http_deadline_closures", .gauge, "Connections closed because a whole request did not arrive within requestDeadlineSeconds, since start.")
    /// `pigeon_http_unauthenticated_refusals`
    package static let httpUnauthenticatedRefusals = Metric("pigeon_http_unauthenticated_refusals", .gauge, "Connections refused at accept because the listener's unauthenticated connections were at their cap and none could be cut to make room, since start.")
    /// `pigeon_http_unauthenticated_closures`
    package static let httpUnauthenticatedClosures = Metric("pigeon_http_unauthenticated_closures", .gauge, "Connections cut because they sent no head that passed the checks within 5 s of opening, since start.")
    /// `pigeon_tls_certificate_expiry_timestamp_seconds`
    package static let tlsCertificateExpiryTimestampSeconds = Metric("pigeon_tls_certificate_expiry_timestamp_seconds", .gauge, "When the certificate an HTTPS listener presents expires (Unix time), per listener.")
    /// `pigeon_delivery_queue_depth`
    package static let deliveryQueueDepth = Metric("pigeon_delivery_queue_depth", .gauge, "QUEUED deliveries (due now or waiting for a retry), sampled every 5 s.")
    /// `pigeon_delivery_oldest_due_seconds`
    package static let deliveryOldestDueSeconds = Metric("pigeon_delivery_oldest_due_seconds", .gauge, "How long the longest-waiting due delivery has been due (0: none), sampled every 5 s.")
    /// `pigeon_database_up`
    package static let databaseUp = Metric("pigeon_database_up", .gauge, "1 when the last sample's queries reached the database, else 0; sampled every 5 s.")
    /// `pigeon_outbox_depth`
    package static let outboxDepth = Metric("pigeon_outbox_depth", .gauge, "Reports waiting for the bank, sampled every 5 s.")
    /// `pigeon_outbox_oldest_age_seconds`
    package static let outboxOldestAgeSeconds = Metric("pigeon_outbox_oldest_age_seconds", .gauge, "Age of the oldest report waiting for the bank, sampled every 5 s.")
    /// `pigeon_outbox_dead_letters`
    package static let outboxDeadLetters = Metric("pigeon_outbox_dead_letters", .gauge, "Reports dead-lettered after reportMaxAgeHours (pigeon outbox list), sampled every 5 s.")
    /// `pigeon_push_connections_opened`
    package static let pushConnectionsOpened = Metric("pigeon_push_connections_opened", .gauge, "HTTP/2 connections opened to each push service since start.")
    /// `pigeon_push_transfers_restarted`
    package static let pushTransfersRestarted = Metric("pigeon_push_transfers_restarted", .gauge, "Pushes sent again on a fresh connection after a GOAWAY or reset stream, since start.")
    /// `pigeon_sweep_rows_total`
    package static let sweepRowsTotal = Metric("pigeon_sweep_rows_total", .counter, "Rows changed by sweeps: deliveries expired, devices deleted.")
    /// `pigeon_retention_tables_dropped_total`
    package static let retentionTablesDroppedTotal = Metric("pigeon_retention_tables_dropped_total", .counter, "Day partitions of notifications and deliveries dropped after retentionDays.")
    /// `pigeon_sweep_longest_step_seconds`
    package static let sweepLongestStepSeconds = Metric("pigeon_sweep_longest_step_seconds", .gauge, "The longest single sweep transaction since start.")
    /// `pigeon_expiry_deadline_steps_total`
    package static let expiryDeadlineStepsTotal = Metric("pigeon_expiry_deadline_steps_total", .counter, "Expiry steps run by the deadline watcher as deadlines passed, by whether they expired anything.")
    /// `pigeon_pass_pushes_total`
    package static let passPushesTotal = Metric("pigeon_pass_pushes_total", .counter, "Pass update pushes by outcome (accepted, token_dead, retry, refresh_credentials, failed).")
    /// `pigeon_pass_deliveries_total`
    package static let passDeliveriesTotal = Metric("pigeon_pass_deliveries_total", .counter, "Registered devices' pass updates settled by the engine, by state (EXPIRED, SENDING_FAILED).")
    /// `pigeon_activity_pushes_total`
    package static let activityPushesTotal = Metric("pigeon_activity_pushes_total", .counter, "Live Activity and widget pushes (CONTRACT §9) by kind (start, update, end, widgets) and outcome.")
    /// `pigeon_activity_broadcasts_total`
    package static let activityBroadcastsTotal = Metric("pigeon_activity_broadcasts_total", .counter, "Calls to Apple's broadcast channel API by operation (create, delete, broadcast) and result (ok, refused, failed).")
    /// `process_cpu_seconds_total` (Prometheus' standard process metrics: see ProcessMetrics)
    package static let processCPUSecondsTotal = Metric("process_cpu_seconds_total", .counter, "Total user and system CPU time spent in seconds.")
    /// `process_resident_memory_bytes`
    package static let processResidentMemoryBytes = Metric("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.")
    /// `process_start_time_seconds`
    package static let processStartTimeSeconds = Metric("process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds.")
    /// `process_open_fds`
    package static let processOpenFDs = Metric("process_open_fds", .gauge, "Number of open file descriptors (connections included).")

    /// All of them, announced from the first scrape.
    package static let catalogue: [Metric] = [
        .httpRequestsTotal,
        .httpRequestDurationSeconds,
        .soapCallsTotal,
        .soapFaultsTotal,
        .pushOutcomesTotal,
        .pushDurationSeconds,
        .deliveriesTotal,
        .deliveriesHandedBackTotal,
        .outcomesNotWrittenTotal,
        .apnsProviderTokensSignedTotal,
        .apnsProviderTokenRejectionsTotal,
        .apnsProviderTokenThrottledTotal,
        .apnsKeyRestrictionsTotal,
        .pushRetriesTotal,
        .pushCredentialsRefusedTotal,
        .deviceRegistrationsTotal,
        .buildInfo,
        .confidentialPushesTotal,
        .confidentialContentsErasedTotal,
        .passUpdatesTotal,
        .passRegistrationsTotal,
        .passFetchesTotal,
        .bankReportsTotal,
        .httpConnections,
        .httpRequestsInFlight,
        .httpDeadlineClosures,
        .httpUnauthenticatedConnections,
        .httpUnauthenticatedRefusals,
        .httpUnauthenticatedClosures,
        .httpUnauthenticatedEvictions,
        .httpAllowlistRefusals,
        .soapSignInFailuresTotal,
        .databasePoolConnections,
        .databasePoolBusy,
        .databasePoolWaiting,
        .databasePoolOverloaded,
        .databasePoolQueries,
        .databasePoolWaitSeconds,
        .tlsCertificateExpiryTimestampSeconds,
        .deliveryQueueDepth,
        .deliveryOldestDueSeconds,
        .databaseUp,
        .outboxDepth,
        .outboxOldestAgeSeconds,
        .outboxDeadLetters,
        .pushConnectionsOpened,
        .pushTransfersRestarted,
        .sweepRowsTotal,
        .retentionTablesDroppedTotal,
        .sweepLongestStepSeconds,
        .expiryDeadlineStepsTotal,
        .passPushesTotal,
        .passDeliveriesTotal,
        .activityPushesTotal,
        .activityBroadcastsTotal,
        .processCPUSecondsTotal,
        .processResidentMemoryBytes,
        .processStartTimeSeconds,
        .processOpenFDs,
    ]
}
