-- 0007: the files attached to a user's message are part of its turn, and
-- a message may be addressed to a role of the team.

-- One row per file of a message, written with its turn. A file to
-- download is 'pending' until the fetcher stores it ('stored', data set),
-- or gives up ('failed'); a file never to download (too large, a type no
-- model reads, an address outside the CDN) is 'skipped' at once. note
-- says why a file was not read, in words for the user. The master does
-- not decide on a turn while one of its files is pending. lease_owner
-- and lease_until are the fetcher's claim; attempts counts downloads.
CREATE TABLE attachments (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id   bigint      NOT NULL,
    turn_id      bigint      NOT NULL,
    position     integer     NOT NULL CHECK (position >= 0),
    discord_id   text        NOT NULL,
    name         text        NOT NULL,
    content_type text        NOT NULL DEFAULT '',
    size         bigint      NOT NULL CHECK (size >= 0),
    url          text        NOT NULL DEFAULT '',
    kind         text        NOT NULL CHECK (kind IN ('text', 'image', 'other')),
    state        text        NOT NULL CHECK (state IN ('pending', 'stored', 'skipped', 'failed')),
    note         text        NOT NULL DEFAULT '',
    -- Bounded by CALLON_ATTACHMENT_MAX_FILE (at most 64 MiB).
    data         bytea       CHECK (octet_length(data) <= 67108864),
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    lease_owner  text,
    lease_until  timestamptz,
    not_before   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (turn_id, session_id) REFERENCES turns (id, session_id) ON DELETE CASCADE,
    UNIQUE (turn_id, position),
    UNIQUE (turn_id, name)
);

-- The fetcher's queue.
CREATE INDEX attachments_pending_idx ON attachments (id) WHERE state = 'pending';

-- The role a message was addressed to ("@planner …", "planner: …").
ALTER TABLE turns ADD COLUMN addressed_to text;

-- The files of its turn the master handed to a task.
ALTER TABLE tasks ADD COLUMN attachment_ids bigint[] NOT NULL DEFAULT '{}';
