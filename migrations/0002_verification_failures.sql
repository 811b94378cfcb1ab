-- Wrong SMS codes entered for a registration waiting for verification: after a few, the
-- registration is dropped and the app must register again (a new code), so a six-digit code
-- cannot be guessed through the gateway.
ALTER TABLE devices ADD COLUMN verification_failures integer NOT NULL DEFAULT 0;
