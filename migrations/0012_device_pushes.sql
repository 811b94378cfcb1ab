-- Each delivery's outcome per device (CONTRACT §5: which phone got the code, and why another did
-- not): written with the delivery's outcome by the engine, kept by day like the deliveries and
-- dropped with them after retentionDays.
CREATE TABLE device_pushes (
    notification_key    bigint      NOT NULL,
    position            integer     NOT NULL,
    -- The device's row id at the time (the device may be removed since) and what identifies it.
    device_row_id       bigint      NOT NULL,
    device_id           text        NOT NULL,
    platform            text        NOT NULL,
    app_id              text        NOT NULL,
    -- The push token shortened; never the whole token.
    token_masked        text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('SENT', 'RETRYING', 'FAILED', 'INVALID_TOKEN', 'EXPIRED')),
    attempts            integer     NOT NULL DEFAULT 1,
    -- The last error stays when a later attempt succeeds or the delivery ends.
    last_error          text,
    -- APNs' apns-id or FCM's message name of the accepted push.
    service_id          text,
    sent_at             timestamptz,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (notification_key, position, device_row_id)
) PARTITION BY RANGE (notification_key);

-- Days are created with their device pushes from now on.
CREATE OR REPLACE FUNCTION pigeon_create_days(first_day bigint, last_day bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    created integer := 0;
    suffix text;
BEGIN
    PERFORM pg_advisory_xact_lock(7414013203);
    FOR day IN first_day..last_day LOOP
        suffix := to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
        IF to_regclass('notifications_p' || suffix) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF notifications FOR VALUES FROM (%s) TO (%s)',
                'notifications_p' || suffix, pigeon_day_key(day), pigeon_day_key(day + 1));
            created := created + 1;
        END IF;
        IF to_regclass('deliveries_p' || suffix) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%s) TO (%s) '
                'WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, '
                'autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05)',
                'deliveries_p' || suffix, pigeon_day_key(day), pigeon_day_key(day + 1));
            created := created + 1;
        END IF;
        IF to_regclass('device_pushes_p' || suffix) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF device_pushes FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 90)',
                'device_pushes_p' || suffix, pigeon_day_key(day), pigeon_day_key(day + 1));
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END
$$;

-- The days that exist already get theirs.
SELECT pigeon_create_days(min(day), max(day))
FROM (SELECT (to_date(right(c.relname, 8), 'YYYYMMDD') - date '1970-01-01')::bigint AS day
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'notifications'::regclass) AS days
HAVING count(*) > 0;

-- Whether a device was ever reached: `reached_at` starts at its registration (hygiene ages a
-- never-reached device from then), so alone it cannot tell "never" from "at registration".
ALTER TABLE device_reach ADD COLUMN reached boolean NOT NULL DEFAULT false;
UPDATE device_reach r SET reached = true FROM devices d WHERE d.id = r.device_id AND r.reached_at > d.created_at;

-- Devices removed, with when and why (a dead token, the bank's deleteSubscription, a revocation
-- in the console, a newer device with overrideSubscriptions, no delivery for
-- deviceExpiredPeriodMillis): the console's "the code went to her old phone" — gone since when?
-- Kept retentionDays.
CREATE TABLE removed_devices (
    id              bigserial   PRIMARY KEY,
    user_id         text        NOT NULL,
    user_folded     text        NOT NULL,
    device_id       text        NOT NULL,
    platform        text        NOT NULL,
    app_id          text        NOT NULL,
    -- The push token shortened; never the whole token.
    token_masked    text        NOT NULL,
    reason          text        NOT NULL,
    removed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX removed_devices_by_user ON removed_devices (user_folded, removed_at DESC);
CREATE INDEX removed_devices_by_age ON removed_devices (removed_at);
