-- When each subscription was last reached (a push accepted for it, or an acknowledgement from
-- it), for subscription hygiene, in a narrow table of its own. Written on the devices row, the
-- time rewrote the whole row and every one of the table's seven indexes on each device's first
-- push of the hour — the largest PostgreSQL cost of a fan-out (48 µs per delivery of ~150).
-- Here an update writes a 40-byte row and two index entries. Every device has its row from
-- the moment it is created (a trigger, so rows inserted by any path have one), starting at
-- its creation time: a device never reached ages from its registration, as before.
CREATE TABLE device_reach (
    device_id   bigint      PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
    reached_at  timestamptz NOT NULL
) WITH (fillfactor = 90);
CREATE INDEX device_reach_by_time ON device_reach (reached_at);

INSERT INTO device_reach (device_id, reached_at)
SELECT id, COALESCE(last_success_at, created_at) FROM devices;

CREATE FUNCTION pigeon_device_reach_start() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_reach (device_id, reached_at) VALUES (NEW.id, NEW.created_at)
    ON CONFLICT (device_id) DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER devices_reach_start AFTER INSERT ON devices
    FOR EACH ROW EXECUTE FUNCTION pigeon_device_reach_start();

DROP INDEX devices_by_last_reached;
ALTER TABLE devices DROP COLUMN last_success_at;
