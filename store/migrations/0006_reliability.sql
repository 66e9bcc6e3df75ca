-- 0006: every failure path terminates; nothing posted while callon was
-- away is lost; a dead process's work is taken over in seconds.

-- A turn may ask the user several questions (the master's follow-ups, a
-- worker's need_info more than once), each posted exactly once: seq
-- numbers a turn's questions from 0. Other kinds keep seq 0.
ALTER TABLE outbox ADD COLUMN seq integer NOT NULL DEFAULT 0 CHECK (seq >= 0);
DROP INDEX outbox_turn_kind_part_key;
CREATE UNIQUE INDEX outbox_turn_kind_part_key ON outbox (turn_id, kind, seq, part) WHERE turn_id IS NOT NULL;

-- Delivery. lease_owner is the process holding a claim, so a dead
-- process's claims come back at once. maybe_sent_at is the first time a
-- send of the row may have reached Discord without being recorded: a
-- resend later than Discord's nonce window looks for it in the channel
-- first. A pending reply of a team that is dissolved is cancelled.
ALTER TABLE outbox
    ADD COLUMN lease_owner   text,
    ADD COLUMN maybe_sent_at timestamptz;
ALTER TABLE outbox DROP CONSTRAINT outbox_state_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_state_check CHECK (state IN ('pending', 'sent', 'failed', 'cancelled'));

-- Turns are answered in Discord's order: sort_key is the message's
-- snowflake (for a turn without a Discord message, the snowflake of the
-- time it was recorded), so a message recorded late (a catch-up after a
-- restart, a retry after a database blip) takes its place in the queue.
ALTER TABLE turns ADD COLUMN sort_key bigint;
UPDATE turns SET sort_key = CASE
    WHEN message_id ~ '^[0-9]{1,18}$' THEN message_id::bigint
    ELSE ((extract(epoch FROM created_at) * 1000)::bigint - 1420070400000) << 22
END;
ALTER TABLE turns ALTER COLUMN sort_key SET NOT NULL,
    ALTER COLUMN sort_key SET DEFAULT ((extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1420070400000) << 22;
DROP INDEX turns_open_idx;
CREATE INDEX turns_open_idx ON turns (session_id, sort_key, id) WHERE state IN ('queued', 'running', 'waiting');

-- master_calls counts the master's model calls for the turn, before each
-- call: the ceiling on them holds whatever path the code takes, across
-- restarts. A message refused (a catch-up beyond its bound) is a turn in
-- state 'refused', so it is never picked up again.
ALTER TABLE turns ADD COLUMN master_calls integer NOT NULL DEFAULT 0 CHECK (master_calls >= 0);
ALTER TABLE turns DROP CONSTRAINT turns_state_check;
ALTER TABLE turns ADD CONSTRAINT turns_state_check
    CHECK (state IN ('queued', 'running', 'waiting', 'done', 'cancelled', 'refused'));

-- Live processes. Each holds pg_advisory_lock(<class>, lock_key) on a
-- connection of its own for its lifetime; when that connection closes
-- (the process died), the lock is free, and the sweeper takes the
-- process's leases back (tasks, masters, outbox claims) instead of
-- waiting for them to expire. lost_at is when a sweeper first found the
-- lock free; the takeover waits a moment in case the holder is only
-- reconnecting.
CREATE TABLE processes (
    owner      text        PRIMARY KEY,
    lock_key   integer     GENERATED ALWAYS AS IDENTITY UNIQUE,
    started_at timestamptz NOT NULL DEFAULT now(),
    lost_at    timestamptz
);
