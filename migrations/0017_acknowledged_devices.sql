-- CONTRACT §10 "Per device, to the acknowledgement": when the app on a device (its bearer token)
-- said it received or opened a notification. Written by the device API's delivered/opened calls on
-- that device's push row; nullable columns without a default rewrite no partition, and no index
-- covers them, so the update stays HOT.
ALTER TABLE device_pushes ADD COLUMN delivered_at timestamptz, ADD COLUMN opened_at timestamptz;
