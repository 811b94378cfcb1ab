-- CONTRACT §9: Live Activities, broadcast channels and widget refreshes.

-- An iOS device's push-to-start token per activity attributes type; gone with the device.
CREATE TABLE activity_start_tokens (
    device_row_id   bigint      NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    activity_type   text        NOT NULL,
    token           text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_row_id, activity_type)
);

-- An activity the bank started; last_timestamp is the aps.timestamp of its newest event, so
-- every event gets a larger one (seconds since 1970).
CREATE TABLE activities (
    activity_id     text        PRIMARY KEY,
    activity_type   text        NOT NULL,
    -- The start's attributes (a JSON object text), pushed with the start.
    attributes      text        NOT NULL,
    -- The newest content state sent: an end without one ends on it.
    content_state   text        NOT NULL,
    ended           boolean     NOT NULL DEFAULT false,
    last_timestamp  bigint      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- Retention drops activities not updated for retentionDays.
CREATE INDEX activities_by_update ON activities (updated_at);

-- The recipients in the order the bank sent them (getActivityStatus answers per recipient).
CREATE TABLE activity_recipients (
    activity_id     text        NOT NULL REFERENCES activities ON DELETE CASCADE,
    position        integer     NOT NULL,
    user_id         text        NOT NULL,
    PRIMARY KEY (activity_id, position)
);

-- Each device an activity reaches: an iPhone with its update token once the phone sends it
-- (STARTING until then), or an Android device (data messages; RUNNING once started).
CREATE TABLE activity_devices (
    activity_id         text        NOT NULL REFERENCES activities ON DELETE CASCADE,
    device_row_id       bigint      NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    user_id             text        NOT NULL,
    update_token        text,
    state               text        NOT NULL CHECK (state IN ('STARTING', 'RUNNING', 'ENDED')),
    -- The aps.timestamp of the newest event pushed to this device: an older one is dropped.
    last_sent_timestamp bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (activity_id, device_row_id)
);
CREATE INDEX activity_devices_by_device ON activity_devices (device_row_id);

-- Pushes waiting to go: at most one per activity and device (a newer event replaces one not
-- yet pushed, so nothing goes out of order), or per device for a widget refresh (activity_id
-- ''). An iPhone's update or end waits until the device has an update token.
CREATE TABLE activity_pushes (
    activity_id         text        NOT NULL,
    device_row_id       bigint      NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    kind                text        NOT NULL CHECK (kind IN ('start', 'update', 'end', 'widgets')),
    event_timestamp     bigint      NOT NULL,
    content_state       text,
    alert_title         text,
    alert_body          text,
    stale_date          bigint,
    dismissal_date      bigint,
    relevance_score     double precision,
    priority            integer,
    attempts            integer     NOT NULL DEFAULT 0,
    next_attempt_at     timestamptz NOT NULL DEFAULT now(),
    lease_owner         text,
    last_error          text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (activity_id, device_row_id)
);
CREATE INDEX activity_pushes_due ON activity_pushes (next_attempt_at);

-- Broadcast channels created through Apple's channel management API.
CREATE TABLE activity_channels (
    channel_id      text        PRIMARY KEY,
    app_id          text        NOT NULL,
    activity_type   text        NOT NULL,
    storage_policy  integer     NOT NULL CHECK (storage_policy IN (0, 1)),
    environment     text        NOT NULL DEFAULT 'production',
    last_timestamp  bigint      NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now()
);
