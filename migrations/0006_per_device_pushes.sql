-- Each device's push has its own outcome. A delivery (one recipient) stays in the queue while
-- some of its devices wait for a retry, also once another device accepted the push and the
-- delivery is SENT: `pending_devices` names the devices still to push (NULL: every subscribed
-- device, as on the first attempt). The column is in no index, so writing it keeps an update HOT
-- where the queue index allows.
ALTER TABLE deliveries ADD COLUMN pending_devices bigint[];

-- In the queue (`next_attempt_at` set): QUEUED, or SENT with devices still to retry. QUEUED is
-- always in the queue.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_queue_states
    CHECK (next_attempt_at IS NULL OR state IN ('QUEUED', 'SENT'));
ALTER TABLE deliveries ADD CONSTRAINT deliveries_queued_in_queue
    CHECK (state <> 'QUEUED' OR next_attempt_at IS NOT NULL);
