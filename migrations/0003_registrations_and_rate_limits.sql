-- Registrations waiting for their SMS code move to a table of their own, each with a random,
-- single-use registration id (stored as its SHA-256 digest): a verification subscribes exactly
-- the push token of the registration that asked for it, and a second registration of the same
-- device no longer replaces the first. Waiting rows from before cannot be verified without an id
-- and are dropped (the app registers again).
CREATE TABLE pending_registrations (
    id                  bigserial   PRIMARY KEY,
    registration_digest bytea       NOT NULL UNIQUE,
    bank_client_id      text        NOT NULL,
    user_id             text        NOT NULL,
    user_folded         text        NOT NULL,
    device_id           text        NOT NULL,
    platform            text        NOT NULL,
    push_token          text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pending_registrations_by_device ON pending_registrations (user_folded, device_id);
CREATE INDEX pending_registrations_by_age ON pending_registrations (created_at);
DELETE FROM devices WHERE state = 'PENDING_VERIFICATION';
ALTER TABLE devices DROP COLUMN verification_failures;

-- Fixed-window counters shared by every gateway process: registrations per user, verification
-- attempts per device. A row lives until its window ends (the hygiene sweep removes it).
CREATE TABLE rate_limits (
    bucket          text        PRIMARY KEY,
    window_ends_at  timestamptz NOT NULL,
    count           integer     NOT NULL
);
CREATE INDEX rate_limits_by_window_end ON rate_limits (window_ends_at);
