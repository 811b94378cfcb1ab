-- A user's recent notifications for the operator console ("did client 1001 get the payment
-- code?"): each day's deliveries by user, newest notification first. One more index entry per
-- delivery written (measured with bench/fanout.sh: README "Fan-out").
CREATE INDEX deliveries_by_user ON deliveries (user_folded, notification_key DESC);
