-- 0005: a master decision that fails because the model cannot be reached
-- is retried later instead of answering with an apology at once.
-- master_failures counts those failures for the turn; PendingSessions
-- skips a turn until not_before.
ALTER TABLE turns
    ADD COLUMN master_failures integer NOT NULL DEFAULT 0 CHECK (master_failures >= 0),
    ADD COLUMN not_before      timestamptz;
