-- 0013: trust boundaries (#20): every model call charged when it returns,
-- against budgets that hold each call's worst case while it runs.

-- Tokens held by a session's model calls in flight: their worst case,
-- until each is settled to what it used (spend_holds).
ALTER TABLE sessions ADD COLUMN held_tokens bigint NOT NULL DEFAULT 0 CHECK (held_tokens >= 0);

-- A guild's tokens of one UTC day, all models together, and those held by
-- its calls in flight: the one row every call of the guild's teams
-- reserves against, so concurrent calls cannot overshoot the daily budget
-- together. guild_usage keeps the same day's tokens by model.
CREATE TABLE guild_spend (
    guild_id    text   NOT NULL,
    day         date   NOT NULL,
    used_tokens bigint NOT NULL DEFAULT 0 CHECK (used_tokens >= 0),
    held_tokens bigint NOT NULL DEFAULT 0 CHECK (held_tokens >= 0),
    PRIMARY KEY (guild_id, day)
);
INSERT INTO guild_spend (guild_id, day, used_tokens)
SELECT guild_id, day, sum(prompt_tokens + completion_tokens) FROM guild_usage GROUP BY guild_id, day;

-- One model call in flight: its worst case (prompt and max output), held
-- against its session and its guild's day from before the call until it
-- is settled. A hold whose process died (owner), or that outlived
-- expires_at, is settled at its worst case by the sweeper: the call may
-- have been made and paid for.
CREATE TABLE spend_holds (
    id                bigserial   PRIMARY KEY,
    session_id        bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    guild_id          text        NOT NULL,
    day               date        NOT NULL,
    task_id           bigint,
    model             text        NOT NULL,
    prompt_tokens     bigint      NOT NULL CHECK (prompt_tokens >= 0),
    completion_tokens bigint      NOT NULL CHECK (completion_tokens >= 0),
    owner             text        NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL
);
CREATE INDEX spend_holds_expires_idx ON spend_holds (expires_at);
CREATE INDEX spend_holds_owner_idx ON spend_holds (owner);

-- An approval request shows the call's arguments in full (arguments held
-- them shortened), and names the Discord roles whose members alone
-- decide (the operator's approvers of the tool's server; none: the team's
-- owner and members who can manage threads).
ALTER TABLE approvals ADD COLUMN approvers text[] NOT NULL DEFAULT '{}';

-- A message may carry one file (an approval request's arguments when
-- they do not fit in its text).
ALTER TABLE outbox ADD COLUMN file_name text CHECK (char_length(file_name) BETWEEN 1 AND 100),
                   ADD COLUMN file_data bytea,
                   ADD CONSTRAINT outbox_file_check CHECK ((file_name IS NULL) = (file_data IS NULL));
