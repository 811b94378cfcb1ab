-- CONTRACT §9: the alert's interruption level as the bank sent it (NULL: not sent, Apple's
-- default). Devices registered by Firebase Installation ID need no column: their push_token is
-- stored as 'fid:' and the id (FirebaseInstallationID), as a Web Push subscription is stored
-- as its JSON.
ALTER TABLE notifications
    ADD COLUMN interruption_level text CHECK (interruption_level IN ('passive', 'active', 'time-sensitive'));
