-- Issue 48: a claim leases its deliveries in one row of its own instead of updating each of them.
-- The lease's update of every delivery moved `next_attempt_at` (the queue index's column), so it
-- was never HOT: the row and its three index entries again, four WAL records a delivery claimed,
-- on top of the outcome's. A delivery is leased while it is listed in a lease that has not ended
-- (`leased_until` in the future) and it was not written since the claim (`updated_at` not after
-- `claimed_at`): its outcome or hand-back frees it without touching the lease. A claim skips
-- leased deliveries; a lease ends when every delivery in it was written (`remaining` reaches 0),
-- when its gateway stops, or when its time runs out — a gateway that died holding it: the next
-- claim ends it, counts an attempt for each delivery it still held and claims them again.
CREATE TABLE delivery_leases (
    id                  bigserial   PRIMARY KEY,
    owner               text        NOT NULL,
    claimed_at          timestamptz NOT NULL,
    leased_until        timestamptz NOT NULL,
    -- Deliveries not yet written back (an outcome or a hand-back through this lease).
    remaining           integer     NOT NULL,
    -- The key range of its deliveries: ending it updates only the partitions they are in.
    lowest_key          bigint      NOT NULL,
    highest_key         bigint      NOT NULL,
    -- Their priorities: a claim of the urgent lane skips the leases of a blast it cannot meet.
    lowest_priority     integer     NOT NULL,
    highest_priority    integer     NOT NULL,
    notification_keys   bigint[]    NOT NULL,
    users               text[]      NOT NULL,
    positions           integer[]   NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
CREATE INDEX delivery_leases_by_end ON delivery_leases (leased_until);
CREATE INDEX delivery_leases_by_owner ON delivery_leases (owner);

-- A gateway of an earlier version leases by writing `lease_owner`, and would push deliveries this
-- version holds (it knows no lease rows). The column goes (a change of the catalog only), so every
-- statement of such a gateway that touches the queue fails instead: stop the gateways of earlier
-- versions before the first of this version starts (docs/operating.md, "Upgrades"). Deliveries an
-- earlier gateway still held become due when their lease time passes, as after a crash. (A trigger
-- refusing the column's writes was measured: a BEFORE UPDATE row trigger locks every row it could
-- fire for first, a WAL record per outcome written.)
ALTER TABLE deliveries DROP COLUMN lease_owner;

-- With the claim writing no delivery, a delivery's outcome is the one update of a fan-out, and a
-- batch's outcomes update every row of a page in one transaction (whose old versions cannot be
-- pruned before it ends). At fillfactor 80 most new versions found no room on their page and moved
-- to another: two lock records and the update, where a version kept on its page writes the update
-- alone (its index entries are written either way; leaving the queue index is never HOT). Days'
-- partitions are now half full, room for a new version of every row on the page; the ones already
-- created for today and later take it for the rows still to come.
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
                'WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.02, '
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

DO $$
DECLARE
    partition text;
BEGIN
    FOR partition IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'deliveries'::regclass
          AND right(c.relname, 8) >= to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')
    LOOP
        EXECUTE format('ALTER TABLE %I SET (fillfactor = 50)', partition);
    END LOOP;
END
$$;
