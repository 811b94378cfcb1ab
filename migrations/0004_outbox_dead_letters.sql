-- Reports the bank kept refusing past reportMaxAgeHours leave the outbox for this table: logged
-- once, counted, listed and re-queued by an operator (`pigeon outbox list|retry`), never retried
-- forever in the background.
CREATE TABLE outbox_dead (
    id          bigint      PRIMARY KEY,
    kind        text        NOT NULL,
    payload     jsonb       NOT NULL,
    attempts    integer     NOT NULL,
    last_error  text,
    created_at  timestamptz NOT NULL,
    died_at     timestamptz NOT NULL DEFAULT now()
);
