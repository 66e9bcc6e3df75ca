-- 0011: the inbound API (POST /v1/dispatch, POST /v1/sessions/{id}/messages,
-- GET /v1/sessions/{id}) and callbacks.

-- A team started through the API carries the caller's idempotency key:
-- unique, so one key never starts two teams, whatever runs at once. Its
-- callback URL receives the team's reports (session.reported events).
ALTER TABLE sessions
    ADD COLUMN api_key      text UNIQUE CHECK (length(api_key) BETWEEN 1 AND 200),
    ADD COLUMN callback_url text CHECK (length(callback_url) BETWEEN 1 AND 2000);

-- A dispatch being started: the first request with a key claims it until
-- lease_until, so concurrent requests with that key do not each open a
-- thread; the claim goes when the request ends. The unique api_key above
-- is what guarantees one team, should a lease run out mid-request.
CREATE TABLE api_claims (
    key         text        PRIMARY KEY,
    lease_until timestamptz NOT NULL
);

-- The ids (webhook-id) of signed requests seen, until they can no longer
-- be replayed (their timestamp is out of the 5-minute window): shared by
-- every process, so a request replayed to another one is refused too.
CREATE TABLE api_seen (
    id         text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX api_seen_expires_idx ON api_seen (expires_at);

-- An event for a session's callback goes to that URL, signed with the
-- API's secret, instead of to CALLON_WEBHOOK_URL.
ALTER TABLE webhook_events ADD COLUMN url text;

-- A team that reports only to its callback delivers reports there.
ALTER TABLE reports DROP CONSTRAINT reports_delivery_check,
    ADD CONSTRAINT reports_delivery_check CHECK (delivery IN ('injected', 'posted', 'callback'));
