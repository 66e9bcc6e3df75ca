-- 0017: replies follow Discord's recovery within seconds.

-- tried_at is when a pending message's last send failed. While sends fail,
-- the outbox probes one message at a time, the one tried least recently;
-- the first success shortens every wait to at most one probe interval
-- after that message's last try.
ALTER TABLE outbox ADD COLUMN tried_at timestamptz;

-- A channel's first pending message, found without reading the others:
-- claims and probes look for it.
CREATE INDEX outbox_pending_channel_idx ON outbox (channel_id, id) WHERE state = 'pending';
