-- Notifications and deliveries are kept for `retentionDays` and then dropped a whole day at a
-- time: both tables are range-partitioned by a notification key whose high bits are the day
-- (UTC) of the send, so a day is one partition of each, created ahead by the gateway and
-- dropped when it has aged out. Rows are never deleted one by one.
--
-- The key is `day << 40 | serial`: every lookup by key (the engine, status, acknowledgements
-- once the id is resolved) reaches exactly one partition, and a day's key range is known before
-- its first send. Notification ids stay unique (the send takes an advisory lock per id and looks
-- in every partition), but are not the primary key: a partitioned table's unique keys must hold
-- the partition key.
--
-- The recipient list is stored once, as the deliveries (in the order sent); a delivery row is
-- narrow (no second copy of the id text) and its state is in no index, so acknowledgements are
-- HOT updates. A delivery is in the queue exactly while `next_attempt_at` is set (QUEUED).

CREATE SEQUENCE notification_serial CACHE 100;

-- The day (UTC, days since 1970-01-01) of a moment, and the first key of a day.
CREATE FUNCTION pigeon_day(moment timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN floor(extract(epoch FROM moment) / 86400)::bigint;
CREATE FUNCTION pigeon_day_key(day bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN day << 40;
-- A new notification key for a send at `moment`.
CREATE FUNCTION pigeon_notification_key(moment timestamptz) RETURNS bigint
    LANGUAGE sql VOLATILE
    RETURN pigeon_day_key(pigeon_day(moment)) | (nextval('notification_serial') & 1099511627775);

ALTER TABLE notifications RENAME TO notifications_v4;
ALTER INDEX notifications_pkey RENAME TO notifications_v4_pkey;
ALTER INDEX notifications_expiring RENAME TO notifications_v4_expiring;
ALTER TABLE deliveries RENAME TO deliveries_v4;
ALTER INDEX deliveries_pkey RENAME TO deliveries_v4_pkey;
ALTER INDEX deliveries_claimable RENAME TO deliveries_v4_claimable;

CREATE TABLE notifications (
    key                 bigint      NOT NULL,
    id                  text        NOT NULL,
    recipient_count     integer     NOT NULL,
    timeout_seconds     integer     NOT NULL CHECK (timeout_seconds > 0),
    perishable          boolean,
    priority            integer,
    push_badge          integer,
    push_sound          text,
    push_text           text        NOT NULL,
    push_type           text        NOT NULL,
    push_detail_keys    text[]      NOT NULL DEFAULT '{}',
    push_detail_values  text[]      NOT NULL DEFAULT '{}',
    -- NULL keys: the notification had no <details>; empty arrays: an empty <details/>.
    detail_keys         text[],
    detail_values       text[],
    created_at          timestamptz NOT NULL,
    expires_at          timestamptz NOT NULL,
    -- Set once the expiry sweep has handled the notification's deliveries.
    expiry_handled      boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (key)
) PARTITION BY RANGE (key);
CREATE INDEX notifications_by_id ON notifications (id);
CREATE INDEX notifications_expiring ON notifications (expires_at) WHERE NOT expiry_handled;

CREATE TABLE deliveries (
    notification_key    bigint      NOT NULL,
    position            integer     NOT NULL,
    user_id             text        NOT NULL,
    user_folded         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('QUEUED', 'SENT', 'DELIVERED', 'READ',
                                        'SENDING_FAILED', 'INVALID_SUBSCRIPTION', 'EXPIRED')),
    priority            integer     NOT NULL DEFAULT 0,
    attempts            integer     NOT NULL DEFAULT 0,
    expires_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- Set exactly while QUEUED: when the delivery is due (a claim moves it to the end of its lease).
    next_attempt_at     timestamptz,
    lease_owner         text,
    last_error          text,
    PRIMARY KEY (notification_key, user_folded, position),
    CHECK ((state = 'QUEUED') = (next_attempt_at IS NOT NULL))
) PARTITION BY RANGE (notification_key);
-- The queue: QUEUED rows by priority, then due time. Claims skip from priority to priority, so
-- rows not yet due (back-off during an outage) are never walked.
CREATE INDEX deliveries_claimable ON deliveries (priority DESC, next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

-- Creates the partitions of every day from `first_day` to `last_day` that do not exist yet.
-- Deliveries leave room on each page for the updates of a delivery's life (claim, result,
-- acknowledgements) to stay on its page, and are vacuumed and analysed often: a day's
-- partition churns while it is current and is read-only afterwards.
CREATE FUNCTION pigeon_create_days(first_day bigint, last_day bigint) RETURNS integer
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
    END LOOP;
    RETURN created;
END
$$;

-- The rows of version 4 move over, each notification keyed by the day it was sent.
SELECT pigeon_create_days(
    LEAST(pigeon_day(now()), COALESCE((SELECT pigeon_day(min(created_at)) FROM notifications_v4), pigeon_day(now()))),
    pigeon_day(now()) + 3);

CREATE TEMPORARY TABLE notification_keys ON COMMIT DROP AS
    SELECT id, pigeon_notification_key(created_at) AS key FROM notifications_v4;
INSERT INTO notifications (key, id, recipient_count, timeout_seconds, perishable, priority, push_badge,
    push_sound, push_text, push_type, push_detail_keys, push_detail_values, detail_keys, detail_values,
    created_at, expires_at, expiry_handled)
SELECT k.key, n.id, cardinality(n.recipients), n.timeout_seconds, n.perishable, n.priority, n.push_badge,
    n.push_sound, n.push_text, n.push_type, n.push_detail_keys, n.push_detail_values, n.detail_keys,
    n.detail_values, n.created_at, n.expires_at, n.expiry_handled
FROM notifications_v4 n JOIN notification_keys k ON k.id = n.id;
INSERT INTO deliveries (notification_key, position, user_id, user_folded, state, priority, attempts,
    expires_at, updated_at, next_attempt_at, lease_owner, last_error)
SELECT k.key, d.position, d.user_id, d.user_folded, d.state, d.priority, d.attempts, d.expires_at,
    d.updated_at, CASE WHEN d.state = 'QUEUED' THEN d.next_attempt_at END,
    CASE WHEN d.state = 'QUEUED' THEN d.lease_owner END, d.last_error
FROM deliveries_v4 d JOIN notification_keys k ON k.id = d.notification_id;

DROP TABLE deliveries_v4;
DROP TABLE notifications_v4;

-- Subscription hygiene finds subscriptions not reached for a long time through an index.
-- (`last_success_at` is written at most hourly per device, so the index costs little.) Not a
-- partial index on state = 'SUBSCRIBED': the send's "has a subscribed device" lookup carries
-- that condition, and a planner without statistics combined such an index (every subscribed
-- device) into each lookup.
CREATE INDEX devices_by_last_reached ON devices ((COALESCE(last_success_at, created_at)));
