-- 0002: roles configured by server admins, with an audit trail.
--
-- channel_roles (0001) holds the current roles of each scope (a channel,
-- or a whole guild with channel_id ''), with who changed each one last
-- (updated_by, updated_at). role_changes is the append-only history of
-- every /roles set, remove and reset.

-- Every change to a scope's roles: who, when, and what.
CREATE TABLE role_changes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    guild_id   text        NOT NULL,
    channel_id text        NOT NULL DEFAULT '', -- '' for the whole guild, as in channel_roles
    action     text        NOT NULL CHECK (action IN ('set', 'remove', 'reset')),
    -- The role set or removed; every role a reset removed.
    names      text[]      NOT NULL CHECK (cardinality(names) > 0),
    -- set: the definition saved; remove: the definition removed; reset:
    -- the definitions removed, by name. Kept so a change can be undone.
    detail     jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object'),
    changed_by text        NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- /roles list: a channel's and its guild's latest changes.
CREATE INDEX role_changes_scope_idx ON role_changes (guild_id, channel_id, id);
