-- CONTRACT §10 "The bank hears at once when a notification reaches nobody": when a recipient's
-- delivery became final without reaching a device (INVALID_SUBSCRIPTION, SENDING_FAILED) within
-- the notification's timeout, the statement that wrote the state also queued its
-- reportNotificationExpired in the outbox and set this column. The expiry sweep passes over such
-- a delivery (a SENDING_FAILED one could still expire): the bank is told once. NULL: not told
-- early. Adding a nullable column without a default rewrites no partition.
ALTER TABLE deliveries ADD COLUMN reported_early_at timestamptz;
