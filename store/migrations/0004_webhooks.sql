-- 0004: outbound webhooks for outside dispatchers.
--
-- An event is written in the same transaction as the state change it
-- describes (only while webhooks are enabled), then delivered by a sender
-- loop that retries with backoff. payload is the whole JSON body sent,
-- event id included, so every retry carries the same event.

CREATE TABLE webhook_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id      bigint      NOT NULL REFERENCES sessions ON DELETE CASCADE,
    event           text        NOT NULL
                                CHECK (event IN ('session.started', 'session.reported',
                                                 'session.blocked', 'session.dissolved')),
    payload         jsonb       NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    state           text        NOT NULL DEFAULT 'pending'
                                CHECK (state IN ('pending', 'delivered', 'failed')),
    -- Deliveries started, counted when claimed: a sender that dies while
    -- posting still used up an attempt.
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- On a pending event: not before this time. A claim moves it to the
    -- end of the sender's lease (a crashed sender's events come back
    -- after it); a failed delivery to the retry time.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer, -- the receiver's HTTP status; NULL when none came
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- The sender's queue: due pending events. Small, since delivered and
-- failed events leave it.
CREATE INDEX webhook_events_due_idx ON webhook_events (next_attempt_at, id) WHERE state = 'pending';
-- The session foreign key (cascading deletes), and a session's events.
CREATE INDEX webhook_events_session_idx ON webhook_events (session_id, id);
