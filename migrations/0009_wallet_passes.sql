-- Wallet passes kept current (CONTRACT §7): the bank stores each new version of a pass, every
-- device registered for it gets an update push, and the fetch that follows is tracked like a
-- delivery.

-- The latest version of each pass. The authentication token is kept as its SHA-256 digest (it is
-- the pass's password in Apple's web service). modified_at is Last-Modified in whole seconds and
-- grows with every version; update_tag is the opaque tag devices ask "passes updated since" with.
-- reported_version: the last version reported to the bank as not fetched (one report a version).
CREATE SEQUENCE pass_update_tags;
CREATE TABLE passes (
    pass_type_id        text        NOT NULL,
    serial_number       text        NOT NULL,
    auth_token_digest   bytea       NOT NULL,
    version             bigint      NOT NULL,
    content             bytea       NOT NULL,
    modified_at         timestamptz NOT NULL,
    update_tag          bigint      NOT NULL,
    reported_version    bigint      NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pass_type_id, serial_number)
);
-- A .pkpass is a ZIP of PNGs: compressing it again only costs the attempt.
ALTER TABLE passes ALTER COLUMN content SET STORAGE EXTERNAL;

-- A Wallet on one phone or watch, by the identifier Wallet gives it, and its APNs token.
CREATE TABLE pass_devices (
    device_library_id   text        PRIMARY KEY,
    push_token          text        NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- A device registered for a pass, with where it stands with the pass's current version:
-- REGISTERED (nothing pushed since it registered), QUEUED (push due at next_attempt_at), SENT
-- (pushed; next_attempt_at is when its wait for the fetch ends), FETCHED, EXPIRED, SENDING_FAILED.
-- pushes: update pushes APNs accepted for this version; failures: attempts in a row APNs did not
-- take (connection, 429, 5xx), retried with back-off. listed_at: when the device last asked
-- which of its passes changed and was told this one (its fetch comes next).
CREATE TABLE pass_registrations (
    pass_type_id        text        NOT NULL,
    serial_number       text        NOT NULL,
    device_library_id   text        NOT NULL REFERENCES pass_devices ON DELETE CASCADE,
    state               text        NOT NULL DEFAULT 'REGISTERED'
                                    CHECK (state IN ('REGISTERED', 'QUEUED', 'SENT', 'FETCHED', 'EXPIRED', 'SENDING_FAILED')),
    version             bigint      NOT NULL,
    pushes              integer     NOT NULL DEFAULT 0,
    failures            integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz,
    lease_owner         text,
    listed_at           timestamptz,
    last_error          text,
    registered_at       timestamptz NOT NULL DEFAULT now(),
    state_changed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pass_type_id, serial_number, device_library_id),
    FOREIGN KEY (pass_type_id, serial_number) REFERENCES passes ON DELETE CASCADE
);
CREATE INDEX pass_registrations_by_device ON pass_registrations (device_library_id, pass_type_id);
-- The pass engine's claims: pushes due and fetch waits that ended.
CREATE INDEX pass_registrations_due ON pass_registrations (next_attempt_at) WHERE state IN ('QUEUED', 'SENT');

-- What devices post to /v1/log: bounded messages, kept a week.
CREATE TABLE pass_logs (
    id                  bigserial   PRIMARY KEY,
    peer                text        NOT NULL,
    message             text        NOT NULL,
    received_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pass_logs_by_time ON pass_logs (received_at);
