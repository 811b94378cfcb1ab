-- Several apps in one gateway (CONTRACT §2, §4). Each device belongs to one of the configured
-- apps ('' is the default app, the top-level keys of server.conf) and its token to an APNs
-- environment ('sandbox' for development builds; ignored for other platforms). A registration
-- waiting for its SMS code carries both until it is verified.
ALTER TABLE devices
    ADD COLUMN app_id text NOT NULL DEFAULT '',
    ADD COLUMN environment text NOT NULL DEFAULT 'production' CHECK (environment IN ('production', 'sandbox'));
ALTER TABLE pending_registrations
    ADD COLUMN app_id text NOT NULL DEFAULT '',
    ADD COLUMN environment text NOT NULL DEFAULT 'production' CHECK (environment IN ('production', 'sandbox'));

-- Every platform of the contract: RuStore's and Huawei's pushes for Android phones without
-- Google services, Web Push for browsers (the gateway accepts each once it can push to it).
ALTER TABLE devices DROP CONSTRAINT devices_platform_check;
ALTER TABLE devices ADD CONSTRAINT devices_platform_check
    CHECK (platform IN ('IOS', 'ANDROID', 'RUSTORE', 'HUAWEI', 'WEB'));

-- A phone with two of the bank's apps is two devices: iOS gives every app of one vendor the same
-- identifierForVendor, so the device id alone does not tell them apart.
CREATE UNIQUE INDEX devices_by_identity ON devices (user_id, device_id, platform, app_id);
ALTER TABLE devices DROP CONSTRAINT devices_user_id_device_id_platform_key;
