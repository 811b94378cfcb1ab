-- Confidential notifications (CONTRACT §8): a device's encryption key (its id and P-256 point),
-- kept with a registration waiting for its SMS code too; a notification's confidentiality and
-- the moment its content was erased (text, target and details emptied once it is over).
ALTER TABLE devices
    ADD COLUMN encryption_key_id     text,
    ADD COLUMN encryption_public_key bytea,
    ADD CONSTRAINT devices_encryption_key_whole
        CHECK ((encryption_key_id IS NULL) = (encryption_public_key IS NULL));
ALTER TABLE pending_registrations
    ADD COLUMN encryption_key_id     text,
    ADD COLUMN encryption_public_key bytea;
ALTER TABLE notifications
    ADD COLUMN confidential     boolean,
    ADD COLUMN content_erased_at timestamptz;
-- The confidential notifications whose content is still stored: few (the codes in flight), so
-- the sweep that erases them finds them in one small index.
CREATE INDEX notifications_content_kept ON notifications (key) WHERE confidential AND content_erased_at IS NULL;
