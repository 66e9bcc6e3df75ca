-- 0008: spend, abuse and authorization limits that hold.

-- A team's own token budget, set by a server admin (/budget team); NULL
-- means the deployment's CALLON_MAX_SESSION_TOKENS, 0 no limit.
ALTER TABLE sessions ADD COLUMN token_budget bigint CHECK (token_budget >= 0);

-- A session's tokens by model, charged with its totals (sessions.*_tokens),
-- so its cost can be priced. model is '' when the model is not known.
CREATE TABLE session_usage (
    session_id        bigint NOT NULL REFERENCES sessions ON DELETE CASCADE,
    model             text   NOT NULL,
    prompt_tokens     bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens bigint NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    PRIMARY KEY (session_id, model)
);

-- A guild's tokens per UTC day and model, for its daily budget
-- (CALLON_GUILD_DAILY_TOKENS). Kept for CALLON_RETENTION, like ended
-- sessions.
CREATE TABLE guild_usage (
    guild_id          text   NOT NULL,
    day               date   NOT NULL,
    model             text   NOT NULL,
    prompt_tokens     bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens bigint NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    PRIMARY KEY (guild_id, day, model)
);

-- What a guild's admins set (/budget server): its daily token budget; NULL
-- means the deployment's default, 0 no limit.
CREATE TABLE guild_limits (
    guild_id     text        PRIMARY KEY,
    daily_tokens bigint      CHECK (daily_tokens >= 0),
    updated_by   text        NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Allow lists (/access): who may start teams ('start') and talk to them
-- ('talk'), by user or role, and in which channels. A guild with no rule
-- for an action lets everyone do it.
CREATE TABLE access_rules (
    guild_id  text        NOT NULL,
    action    text        NOT NULL CHECK (action IN ('start', 'talk')),
    kind      text        NOT NULL CHECK (kind IN ('user', 'role', 'channel')),
    target_id text        NOT NULL CHECK (target_id ~ '^[0-9]{1,20}$'),
    added_by  text        NOT NULL,
    added_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (guild_id, action, kind, target_id)
);

-- The append-only audit trail of budget and access changes.
CREATE TABLE limit_changes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id   text        NOT NULL,
    session_id bigint      REFERENCES sessions ON DELETE SET NULL, -- a team's budget
    what       text        NOT NULL CHECK (what IN ('guild_budget', 'team_budget', 'access_allow',
                                                    'access_remove', 'access_clear')),
    detail     jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object'),
    changed_by text        NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX limit_changes_guild_idx ON limit_changes (guild_id, id);
CREATE INDEX limit_changes_session_idx ON limit_changes (session_id) WHERE session_id IS NOT NULL;

-- The per-user rate limit counts a member's recent turns.
CREATE INDEX turns_author_idx ON turns (author_id, created_at);

-- Retention finds sessions that ended long ago.
CREATE INDEX sessions_ended_idx ON sessions (ended_at) WHERE state = 'dissolved';
-- ... and the reports injected into a team (reports.to_session).
CREATE INDEX reports_to_session_idx ON reports (to_session) WHERE to_session IS NOT NULL;
