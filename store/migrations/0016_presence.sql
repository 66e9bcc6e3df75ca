-- 0016: a team that feels present (#23): worker personas, channel memory
-- and a reviewer before the reply, each opt-in or -out per channel.

-- What a channel (or a whole guild, channel_id '') turns on or off, set by
-- its admins with /roles features; NULL leaves a feature to the next
-- source (the guild's, then the roles file's, then the default).
CREATE TABLE channel_features (
    guild_id   text        NOT NULL,
    channel_id text        NOT NULL DEFAULT '',
    personas   boolean,
    memory     boolean,
    review     text        CHECK (review IN ('off', 'on', 'always')),
    updated_by text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (guild_id, channel_id)
);

-- A change of features is in the roles' audit trail.
ALTER TABLE role_changes DROP CONSTRAINT role_changes_action_check,
    ADD CONSTRAINT role_changes_action_check CHECK (action IN ('set', 'remove', 'reset', 'features'));

-- A team's features, resolved when it starts (as its roster is). Teams
-- from before this migration keep what they had: none.
ALTER TABLE sessions ADD COLUMN personas boolean NOT NULL DEFAULT false,
                     ADD COLUMN memory   boolean NOT NULL DEFAULT false,
                     ADD COLUMN review   text    NOT NULL DEFAULT 'off' CHECK (review IN ('off', 'on', 'always'));

-- A role may give its persona's avatar (the roles file's avatar: URL).
ALTER TABLE session_roles ADD COLUMN avatar text NOT NULL DEFAULT '';

-- Channel memory: short facts a master chose to remember (its remember
-- tool), shared by the channel's teams, outliving them. Never a copy of a
-- message: only what a master wrote as a note. session_id and turn_id
-- name where it came from (no foreign key: a note outlives its team's
-- rows). updated_at is when it was last remembered: retention counts
-- from it.
CREATE TABLE channel_notes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id   text        NOT NULL,
    channel_id text        NOT NULL,
    text       text        NOT NULL CHECK (char_length(text) BETWEEN 1 AND 300),
    author_id  text        NOT NULL DEFAULT '', -- the member whose message the master was answering
    session_id bigint      NOT NULL,
    turn_id    bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (guild_id, channel_id, text)
);
CREATE INDEX channel_notes_updated_idx ON channel_notes (updated_at);

-- The audit trail of memory: who remembered, forgot or cleared what note
-- (its id, never its text: a forgotten note is gone everywhere).
CREATE TABLE memory_changes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id   text        NOT NULL,
    channel_id text        NOT NULL,
    action     text        NOT NULL CHECK (action IN ('remember', 'forget', 'clear')),
    note_ids   bigint[]    NOT NULL,
    by_user    text        NOT NULL DEFAULT '', -- an admin's /memory; '' for a master's tool
    session_id bigint,                          -- a master's: its team and turn
    turn_id    bigint,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_changes_scope_idx ON memory_changes (guild_id, channel_id, id);

-- The notes a task was given (read when it runs, so a note forgotten
-- meanwhile is not).
ALTER TABLE tasks ADD COLUMN note_ids bigint[] NOT NULL DEFAULT '{}';

-- A reviewer before the reply: one per turn. The draft is a row before
-- the reviewer is called, the verdict before the reply is written, so a
-- crash resumes where it stopped instead of posting twice or losing it.
CREATE TABLE turn_reviews (
    turn_id    bigint      PRIMARY KEY REFERENCES turns ON DELETE CASCADE,
    session_id bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    draft      text        NOT NULL,
    -- The draft's exchange between members, when the team speaks with
    -- personas (see outbox.persona): [{"member", "text"}].
    exchange   jsonb       NOT NULL DEFAULT '[]',
    state      text        NOT NULL DEFAULT 'reviewing' CHECK (state IN ('reviewing', 'revising', 'done')),
    verdict    text        CHECK (verdict IN ('pass', 'revise', 'caveat', 'skipped')),
    objections jsonb       NOT NULL DEFAULT '[]', -- for the master only; a skipped review's reason
    caveat     text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    decided_at timestamptz
);
CREATE INDEX turn_reviews_session_idx ON turn_reviews (session_id);

-- A verdict is a signal (REVIEW_PASSED: posted as drafted, with a caveat
-- or unreviewed; REVIEW_REVISED: sent back once).
ALTER TABLE signals DROP CONSTRAINT signals_kind_check;
ALTER TABLE signals ADD CONSTRAINT signals_kind_check
    CHECK (kind IN ('ACK', 'PROGRESS', 'TASK_COMPLETE', 'BLOCKED', 'NEED_INFO', 'HANDOFF', 'REPORT', 'WEBHOOK',
                    'TOOL', 'NEED_APPROVAL', 'REVIEW_PASSED', 'REVIEW_REVISED'));

-- A part of a reply posted under a member's name and avatar:
-- {"name", "avatar", "role", "parent"} (parent: the channel whose
-- webhook posts in the thread). NULL: callon's own voice.
ALTER TABLE outbox ADD COLUMN persona jsonb;

-- The webhook callon posts personas through, one per parent channel. Its
-- token is a secret: never logged, never shown.
CREATE TABLE channel_webhooks (
    channel_id text        PRIMARY KEY,
    guild_id   text        NOT NULL,
    webhook_id text        NOT NULL,
    token      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A team is told once that its members cannot speak in their own names
-- (callon lacks Manage Webhooks there).
ALTER TABLE sessions ADD COLUMN persona_notice_at timestamptz;
