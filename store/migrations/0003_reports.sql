-- 0003: cross-channel hand-back. A session may report to a channel or a
-- thread (sessions.report_to, in 0001); a master may dispatch work to a
-- team in another channel, which then reports back to it.

-- Who dispatched a session, and how deep in a chain of dispatches it is.
ALTER TABLE sessions
    ADD COLUMN dispatched_by  bigint REFERENCES sessions ON DELETE SET NULL,
    -- The turn whose master dispatched it: a turn run again after a crash
    -- finds its team instead of starting another.
    ADD COLUMN dispatched_turn bigint REFERENCES turns ON DELETE SET NULL,
    ADD COLUMN dispatch_depth integer NOT NULL DEFAULT 0 CHECK (dispatch_depth >= 0);

-- Active teams per guild are capped (CALLON_MAX_ACTIVE_SESSIONS).
CREATE INDEX sessions_active_guild_idx ON sessions (guild_id) WHERE state = 'active';
CREATE INDEX sessions_dispatched_by_idx ON sessions (dispatched_by) WHERE dispatched_by IS NOT NULL;

-- A report from a session to its report_to channel. It is delivered in
-- the transaction that creates it: injected as a turn of the team whose
-- thread it is addressed to, or posted there through the outbox.
CREATE TABLE reports (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_session bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    from_turn    bigint      REFERENCES turns ON DELETE SET NULL,
    to_channel   text        NOT NULL,
    summary      text        NOT NULL CHECK (btrim(summary) <> ''),
    final        boolean     NOT NULL DEFAULT false, -- sent by /dissolve
    delivery     text        NOT NULL CHECK (delivery IN ('injected', 'posted')),
    to_session   bigint      REFERENCES sessions ON DELETE SET NULL, -- injected: the receiving team
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- One report per turn: a turn the master runs again after a crash cannot
-- report twice.
CREATE UNIQUE INDEX reports_from_turn_key ON reports (from_turn) WHERE from_turn IS NOT NULL;

-- The ping-pong cap counts reports between two places per hour.
CREATE INDEX reports_pair_idx ON reports (from_session, to_channel, created_at);

-- A turn injected by a report: its message_id is 'report:<id>', so a
-- report starts at most one turn whatever happens.
ALTER TABLE turns ADD COLUMN report_id bigint UNIQUE REFERENCES reports ON DELETE SET NULL;
