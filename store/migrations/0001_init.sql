-- 0001: callon's initial schema.
--
-- Conventions: bigint identity ids; timestamptz everywhere; enums are text
-- with CHECK constraints (cheap to extend in a later migration, unlike
-- CREATE TYPE ... AS ENUM); Discord snowflakes are text, as Discord sends
-- them. Sessions are dissolved, never deleted, in normal operation; the
-- ON DELETE CASCADEs exist so an operator can purge a session's history.

-- A team session bound to one Discord thread.
CREATE TABLE sessions (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id           text        NOT NULL,
    channel_id         text        NOT NULL, -- the text channel the thread lives in
    thread_id          text        NOT NULL,
    owner_id           text        NOT NULL,
    goal               text        NOT NULL CHECK (btrim(goal) <> ''),
    state              text        NOT NULL DEFAULT 'active'
                                   CHECK (state IN ('active', 'dissolved')),
    report_to          text        CHECK (report_to <> ''), -- NULL, not '', means none
    prompt_tokens      bigint      NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  bigint      NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    -- Lease on running this session's master: only the process named in
    -- master_owner runs a turn of the session until master_lease_until.
    master_owner       text,
    master_lease_until timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    ended_at           timestamptz,
    CHECK ((master_owner IS NULL) = (master_lease_until IS NULL)),
    -- A dissolved session has an end; an active one has none.
    CHECK ((state = 'dissolved') = (ended_at IS NOT NULL))
);

-- One active session per thread; dissolved ones are history and may repeat.
CREATE UNIQUE INDEX sessions_active_thread_key ON sessions (thread_id) WHERE state = 'active';

-- The roster of a session.
CREATE TABLE session_roles (
    session_id  bigint  NOT NULL REFERENCES sessions ON DELETE CASCADE,
    name        text    NOT NULL CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    description text    NOT NULL DEFAULT '',
    prompt      text    NOT NULL DEFAULT '',
    model       text    NOT NULL DEFAULT '', -- '' means the configured worker model
    temperature real    CHECK (temperature >= 0 AND temperature <= 2),
    max_tokens  integer CHECK (max_tokens > 0),
    timeout_ms  integer CHECK (timeout_ms > 0),
    position    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, name)
);

-- The work caused by one user message.
CREATE TABLE turns (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id        bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    -- The triggering Discord message: unique, so a redelivered gateway
    -- event cannot start a second turn.
    message_id        text        NOT NULL UNIQUE,
    guild_id          text        NOT NULL,
    channel_id        text        NOT NULL, -- where the message was posted: the thread
    author_id         text        NOT NULL,
    content           text        NOT NULL DEFAULT '',
    state             text        NOT NULL DEFAULT 'queued'
                                  CHECK (state IN ('queued', 'running', 'waiting', 'done', 'cancelled')),
    round             integer     NOT NULL DEFAULT 0 CHECK (round >= 0),
    status_message_id text,
    -- When the status message was last edited to show the turn's end; a
    -- turn that ended with this NULL still needs its status settled.
    status_settled_at timestamptz,
    reply_message_id  text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Target of the composite foreign keys below, which keep a child's
    -- session_id consistent with its turn's.
    UNIQUE (id, session_id)
);

-- A session's history, newest last.
CREATE INDEX turns_session_idx ON turns (session_id, id);
-- The per-session queue of turns still to finish.
CREATE INDEX turns_open_idx ON turns (session_id, id) WHERE state IN ('queued', 'running', 'waiting');
-- The status presenter's scan: running turns, and ended turns whose status
-- message still shows them at work.
CREATE INDEX turns_status_idx ON turns (id)
    WHERE state = 'running' OR (status_message_id IS NOT NULL AND status_settled_at IS NULL);

-- One scoped subtask for one role, in one round of one turn.
CREATE TABLE tasks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id        bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    turn_id           bigint      NOT NULL,
    round             integer     NOT NULL CHECK (round >= 0),
    role              text        NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{0,31}$'),
    instruction       text        NOT NULL CHECK (btrim(instruction) <> ''),
    -- Ids of tasks of the same turn whose results this one needs. Not a
    -- foreign key (Postgres has none for array elements); EnqueueTasks
    -- only writes ids of the same batch.
    depends_on        bigint[]    NOT NULL DEFAULT '{}'
                                  CHECK (array_position(depends_on, NULL) IS NULL)
                                  CHECK (NOT id = ANY (depends_on)),
    state             text        NOT NULL DEFAULT 'queued'
                                  CHECK (state IN ('queued', 'running', 'done', 'failed', 'blocked',
                                                   'need_info', 'cancelled', 'timeout')),
    attempt           integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts      integer     NOT NULL DEFAULT 3 CHECK (max_attempts > 0),
    worker_id         text,
    lease_until       timestamptz,
    result            text,
    error             text,
    -- The questions the task asked (need_info) and their answers,
    -- [{"q": "…", "a": "…"}]; the last answer is empty while it waits.
    qa                jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(qa) = 'array'),
    prompt_tokens     bigint      NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens bigint      NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    ended_at          timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (turn_id, session_id) REFERENCES turns (id, session_id) ON DELETE CASCADE,
    -- A running task is always leased, so the sweeper can find it if its
    -- worker dies.
    CHECK (state <> 'running' OR (lease_until IS NOT NULL AND worker_id IS NOT NULL)),
    -- Terminal states carry their end time; open ones do not.
    CHECK ((state IN ('queued', 'running')) = (ended_at IS NULL)),
    UNIQUE (id, session_id)
);

-- Claim order: oldest queued first. Small, because ended tasks leave it.
CREATE INDEX tasks_claimable_idx ON tasks (id) WHERE state = 'queued';
-- The sweeper's scan for expired leases.
CREATE INDEX tasks_running_lease_idx ON tasks (lease_until) WHERE state = 'running';
-- Fan-in (is the round complete?) and dependency cascades, within a turn.
CREATE INDEX tasks_turn_round_idx ON tasks (turn_id, round);
-- Cancelling a session's open tasks, and the session foreign key.
CREATE INDEX tasks_session_idx ON tasks (session_id);

-- The append-only event bus of a session. Written in the same transaction
-- as the state change each signal describes.
CREATE TABLE signals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    task_id    bigint, -- NULL when the signal is about the session
    kind       text        NOT NULL
                           CHECK (kind IN ('ACK', 'PROGRESS', 'TASK_COMPLETE', 'BLOCKED', 'NEED_INFO',
                                           'HANDOFF', 'REPORT', 'WEBHOOK')),
    payload    jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (task_id, session_id) REFERENCES tasks (id, session_id) ON DELETE CASCADE
);

-- Readers page through a session's signals by id.
CREATE INDEX signals_session_idx ON signals (session_id, id);
-- The task foreign key (cascading deletes).
CREATE INDEX signals_task_idx ON signals (task_id) WHERE task_id IS NOT NULL;

-- Messages to post to Discord, durable before they are visible.
CREATE TABLE outbox (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id         bigint      REFERENCES sessions ON DELETE CASCADE,
    turn_id            bigint      REFERENCES turns ON DELETE CASCADE,
    kind               text        NOT NULL
                                   CHECK (kind IN ('reply', 'question', 'kickoff', 'notice', 'summary', 'report')),
    channel_id         text        NOT NULL,
    reply_to           text, -- Discord message id for message_reference
    content            text        NOT NULL CHECK (char_length(content) BETWEEN 1 AND 2000), -- Discord's limit
    part               integer     NOT NULL DEFAULT 0 CHECK (part >= 0),
    -- Sent with enforce_nonce, so a retried send cannot post twice; Discord
    -- caps a nonce at 25 characters.
    nonce              text        NOT NULL UNIQUE CHECK (char_length(nonce) BETWEEN 1 AND 25),
    state              text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts           integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- On a pending row: not before this time. A sender's claim sets it to
    -- the end of its lease (a crashed sender's rows come back after it),
    -- a failed delivery to the retry time. NULL: deliverable now.
    lease_until        timestamptz,
    discord_message_id text,
    error              text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    sent_at            timestamptz,
    -- A turn's message belongs to that turn's session.
    CHECK (turn_id IS NULL OR session_id IS NOT NULL),
    FOREIGN KEY (turn_id, session_id) REFERENCES turns (id, session_id) ON DELETE CASCADE,
    CHECK ((state = 'sent') = (sent_at IS NOT NULL AND discord_message_id IS NOT NULL))
);

-- Exactly one reply (question, ...) per turn, per part: the guard behind
-- "one merged reply per user message". Partial, not NULLS NOT DISTINCT:
-- messages outside a turn (notices, reports) may repeat a kind freely.
CREATE UNIQUE INDEX outbox_turn_kind_part_key ON outbox (turn_id, kind, part) WHERE turn_id IS NOT NULL;
-- The sender's queue.
CREATE INDEX outbox_pending_idx ON outbox (id) WHERE state = 'pending';
-- The session foreign key (cascading deletes).
CREATE INDEX outbox_session_idx ON outbox (session_id) WHERE session_id IS NOT NULL;

-- Roles server admins make available, per channel or guild-wide.
CREATE TABLE channel_roles (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id    text        NOT NULL,
    -- '' means guild-wide rather than NULL, so the unique key below also
    -- holds for guild-wide roles.
    channel_id  text        NOT NULL DEFAULT '',
    name        text        NOT NULL CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    description text        NOT NULL DEFAULT '',
    prompt      text        NOT NULL DEFAULT '',
    model       text        NOT NULL DEFAULT '',
    temperature real        CHECK (temperature >= 0 AND temperature <= 2),
    max_tokens  integer     CHECK (max_tokens > 0),
    timeout_ms  integer     CHECK (timeout_ms > 0),
    updated_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (guild_id, channel_id, name)
);
