-- CONTRACT §10 "Operators are persons" and "Audit trail".
--
-- Console sessions, shared by every gateway of a fleet and kept across restarts: the cookie's
-- random id is stored only as its SHA-256 digest (reading this table signs nobody in); each
-- session ends 30 minutes idle or 8 hours after sign-in (the gateway checks both on every
-- request and removes ended ones).
CREATE TABLE console_sessions (
    digest bytea PRIMARY KEY,
    operator text NOT NULL,
    role text NOT NULL CHECK (role IN ('viewer', 'support', 'admin')),
    csrf_token text NOT NULL,
    started_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_started ON console_sessions (started_at);

-- Who did what in the console (and `pigeon outbox retry`): when (the database's clock, so an
-- entry cannot be back-dated), operator, role, source address, action, target, reason, outcome.
-- Nothing revealed is ever written here. Append-only: an entry cannot be changed, the table
-- cannot be truncated, and only entries older than 365 days can be deleted (the retention sweep,
-- auditRetentionDays >= 365).
CREATE TABLE console_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    operator text NOT NULL,
    role text NOT NULL,
    address text NOT NULL,
    action text NOT NULL CHECK (action IN ('sign-in', 'sign-in-failed', 'reveal', 'revoke', 'requeue', 'test-push', 'outbox-retry')),
    target text NOT NULL,
    reason text NOT NULL,
    outcome text NOT NULL
);
CREATE INDEX console_audit_at ON console_audit (at);

CREATE FUNCTION console_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.at < now() - interval '365 days' THEN
            RETURN OLD;
        END IF;
    END IF;
    RAISE EXCEPTION 'console_audit is append-only: % refused (only entries older than 365 days may be deleted)', TG_OP;
END
$$;
CREATE TRIGGER console_audit_append_only BEFORE UPDATE OR DELETE ON console_audit
    FOR EACH ROW EXECUTE FUNCTION console_audit_append_only();
CREATE TRIGGER console_audit_no_truncate BEFORE TRUNCATE ON console_audit
    FOR EACH STATEMENT EXECUTE FUNCTION console_audit_append_only();
