-- Issue 48: a device's reach is written with the outcome of its pushes (the first push of each
-- hour), and with its time indexed every such update was a new row version plus two index
-- entries (its key and the time): 3.3 WAL records a delivery of a fan-out to devices reached for
-- the first time. Subscription hygiene counts in days (30 by default) and needs only a coarse
-- bound: indexed by the week of the time (days since 1970-01-01 over 7), computed and stored, an
-- update within the same week changes no indexed value and stays HOT (one record, no index
-- entry); a device's first reach of a new week moves its index entry. The table is
-- rewritten once, at this migration (3 s per million devices measured on the test cluster), half full: a batch's
-- outcome updates the reach of up to every device on a page in one transaction, whose earlier
-- versions cannot be pruned before it ends, so each page keeps room for a new version of every
-- row on it (at 90% the new versions of a fan-out to devices registered together moved to
-- other pages: a quarter of them non-HOT in a test of 200).
ALTER TABLE device_reach
    SET (fillfactor = 50),
    ADD COLUMN reached_week bigint GENERATED ALWAYS AS (pigeon_day(reached_at) / 7) STORED;
DROP INDEX device_reach_by_time;
CREATE INDEX device_reach_by_week ON device_reach (reached_week);
