-- 0007: workers that act. A role lists the tools it may use; every call
-- a worker makes is recorded with its result, so a task run again after
-- a crash replays it instead of calling twice; a call that needs a
-- person's approval pauses its task until someone decides.

-- A role's tools: "fetch_url", "<server>.<tool>" or "<server>.*".
ALTER TABLE session_roles ADD COLUMN tools text[] NOT NULL DEFAULT '{}';
ALTER TABLE channel_roles ADD COLUMN tools text[] NOT NULL DEFAULT '{}';

-- A task waiting for a person's decision on one of its calls is in state
-- 'approval': open (its round waits for it), held by no worker (no lease,
-- so the sweeper leaves it alone), and queued again once someone decides
-- or the request expires.
ALTER TABLE tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_state_check
    CHECK (state IN ('queued', 'running', 'approval', 'done', 'failed', 'blocked', 'need_info', 'cancelled', 'timeout'));
ALTER TABLE tasks DROP CONSTRAINT tasks_check2;
ALTER TABLE tasks ADD CONSTRAINT tasks_open_ended_check
    CHECK ((state IN ('queued', 'running', 'approval')) = (ended_at IS NULL));
CREATE INDEX tasks_approval_idx ON tasks (id) WHERE state = 'approval';

ALTER TABLE signals DROP CONSTRAINT signals_kind_check;
ALTER TABLE signals ADD CONSTRAINT signals_kind_check
    CHECK (kind IN ('ACK', 'PROGRESS', 'TASK_COMPLETE', 'BLOCKED', 'NEED_INFO', 'HANDOFF', 'REPORT', 'WEBHOOK',
                    'TOOL', 'NEED_APPROVAL'));

-- The calls of a task's tools, numbered by seq across its attempts, with
-- the model call (step) that asked for them. A call is planned with every
-- other call of its step before any is made, started just before it is
-- made, and done with its result: a task run again replays the done ones
-- into its conversation, makes the planned ones, and tells the model that
-- a started one was interrupted rather than make it again.
CREATE TABLE tool_calls (
    task_id     bigint      NOT NULL,
    session_id  bigint      NOT NULL,
    seq         integer     NOT NULL CHECK (seq >= 0),
    step        integer     NOT NULL CHECK (step >= 0),
    call_id     text        NOT NULL CHECK (call_id <> ''), -- the model's id for the call
    name        text        NOT NULL CHECK (name <> ''),    -- as the model called it: fetch_url, <server>__<tool>
    arguments   text        NOT NULL,                       -- as the model wrote them
    state       text        NOT NULL DEFAULT 'planned' CHECK (state IN ('planned', 'started', 'done')),
    attempt     integer     NOT NULL CHECK (attempt > 0),   -- the task's attempt that last moved it
    result      text,                                       -- what the model read
    is_error    boolean,
    duration_ms integer     CHECK (duration_ms >= 0),
    size        integer     CHECK (size >= 0),              -- the output's bytes before it was cut
    created_at  timestamptz NOT NULL DEFAULT now(),
    started_at  timestamptz,
    ended_at    timestamptz,
    PRIMARY KEY (task_id, seq),
    FOREIGN KEY (task_id, session_id) REFERENCES tasks (id, session_id) ON DELETE CASCADE,
    CHECK ((state = 'done') = (result IS NOT NULL AND is_error IS NOT NULL AND ended_at IS NOT NULL))
);

-- A person's decision on one call: asked for in the transaction that
-- pauses the task (with a NEED_APPROVAL signal and the message with the
-- buttons, through the outbox), decided by a click (who, when), or expired
-- by the sweeper after CALLON_APPROVAL_TIMEOUT, or cancelled with its
-- task. settled_at records that the message shows the outcome.
CREATE TABLE approvals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    task_id    bigint      NOT NULL,
    seq        integer     NOT NULL,
    role       text        NOT NULL,
    tool       text        NOT NULL,
    arguments  text        NOT NULL, -- shortened, as the message shows them
    state      text        NOT NULL DEFAULT 'pending'
                           CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'cancelled')),
    decided_by text        CHECK ((decided_by IS NOT NULL) = (state IN ('approved', 'denied'))), -- a Discord user id
    decided_at timestamptz,
    expires_at timestamptz NOT NULL,
    outbox_id  bigint      REFERENCES outbox ON DELETE SET NULL, -- the message with the buttons
    settled_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (task_id, seq),
    FOREIGN KEY (task_id, seq) REFERENCES tool_calls (task_id, seq) ON DELETE CASCADE,
    CHECK ((state = 'pending') = (decided_at IS NULL))
);

-- The sweeper's scan for requests nobody decided in time.
CREATE INDEX approvals_pending_idx ON approvals (expires_at) WHERE state = 'pending';
-- Decided requests whose message still shows the buttons.
CREATE INDEX approvals_unsettled_idx ON approvals (id) WHERE state <> 'pending' AND settled_at IS NULL;
CREATE INDEX approvals_session_idx ON approvals (session_id);

-- Messages may carry buttons: a JSON array of {label, style, custom_id},
-- sent as one action row. The approval request is such a message.
ALTER TABLE outbox ADD COLUMN buttons jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(buttons) = 'array');
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('reply', 'question', 'kickoff', 'notice', 'summary', 'report', 'approval'));
