-- Pigeon schema, version 1: subscriptions, notifications, one delivery per recipient, and the
-- outbox of reports to the bank. User ids are stored as given and folded to lower case
-- (user_folded) so that caseInsensitiveIds can be switched without rewriting rows.

CREATE TABLE devices (
    id                      bigserial PRIMARY KEY,
    bank_client_id          text        NOT NULL,
    user_id                 text        NOT NULL,
    user_folded             text        NOT NULL,
    device_id               text        NOT NULL,
    platform                text        NOT NULL CHECK (platform IN ('IOS', 'ANDROID')),
    push_token              text        NOT NULL,
    -- SUBSCRIBED devices receive pushes; PENDING_VERIFICATION ones wait for the SMS code.
    state                   text        NOT NULL DEFAULT 'SUBSCRIBED'
                                        CHECK (state IN ('SUBSCRIBED', 'PENDING_VERIFICATION')),
    auth_token_hash         bytea,
    auth_token_expires_at   timestamptz,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    last_success_at         timestamptz,
    UNIQUE (user_id, device_id, platform)
);
CREATE INDEX devices_by_user ON devices (user_id);
CREATE INDEX devices_by_user_folded ON devices (user_folded);
CREATE UNIQUE INDEX devices_by_auth_token ON devices (auth_token_hash) WHERE auth_token_hash IS NOT NULL;
CREATE INDEX devices_by_push_token ON devices (push_token);

CREATE TABLE notifications (
    id                  text        PRIMARY KEY,
    recipients          text[]      NOT NULL,
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
    created_at          timestamptz NOT NULL DEFAULT now(),
    expires_at          timestamptz NOT NULL,
    -- Set once the expiry sweep has handled the notification's deliveries.
    expiry_handled      boolean     NOT NULL DEFAULT false
);
-- The expiry sweep walks notifications, not deliveries: one index entry per notification keeps
-- large fan-outs cheap to insert.
CREATE INDEX notifications_expiring ON notifications (expires_at) WHERE NOT expiry_handled;

-- One row per (notification, recipient): the unit of work of the delivery engine. Written in the
-- same statement as its notification, so no foreign key is checked row by row. The primary key
-- also finds a user's delivery of a notification (acknowledgements); `position` keeps the order
-- the bank sent.
CREATE TABLE deliveries (
    notification_id     text        NOT NULL,
    position            integer     NOT NULL,
    user_id             text        NOT NULL,
    user_folded         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('QUEUED', 'SENT', 'DELIVERED', 'READ',
                                        'SENDING_FAILED', 'INVALID_SUBSCRIPTION', 'EXPIRED')),
    priority            integer     NOT NULL DEFAULT 0,
    expires_at          timestamptz NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- Claiming: a worker takes QUEUED rows whose next_attempt_at has come and moves it to the end
    -- of its lease; lease_owner says which process holds them.
    attempts            integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz NOT NULL DEFAULT now(),
    lease_owner         text,
    last_error          text,
    PRIMARY KEY (notification_id, user_folded, position)
);
-- Claiming: QUEUED rows by priority, then due time. A claim moves next_attempt_at to the end of
-- its lease, so a crashed process's rows come due again by themselves.
CREATE INDEX deliveries_claimable ON deliveries (priority DESC, next_attempt_at)
    WHERE state = 'QUEUED';

-- Reports to the bank (pushIsOpened, reportNotificationExpired), written in the transaction that
-- changes the state they report, sent at least once.
CREATE TABLE outbox (
    id                  bigserial   PRIMARY KEY,
    kind                text        NOT NULL,
    payload             jsonb       NOT NULL,
    attempts            integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz NOT NULL DEFAULT now(),
    last_error          text,
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_due ON outbox (next_attempt_at);
