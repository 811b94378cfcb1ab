-- Issue 50: iOS 18 controls (Control Center, Lock Screen) refreshed by a push, like widgets:
-- `apns-push-type: controls` on `<bundle>.push-type.controls`. Queued in activity_pushes with kind
-- 'controls' (under activity id '#controls', so a pending widget refresh of the same phone keeps
-- its own row). NOT VALID, then VALIDATE: the check is swapped without holding the table locked
-- while every row is read.
ALTER TABLE activity_pushes DROP CONSTRAINT activity_pushes_kind_check;
ALTER TABLE activity_pushes ADD CONSTRAINT activity_pushes_kind_check CHECK (kind IN ('start', 'update', 'end', 'widgets', 'controls')) NOT VALID;
ALTER TABLE activity_pushes VALIDATE CONSTRAINT activity_pushes_kind_check;
