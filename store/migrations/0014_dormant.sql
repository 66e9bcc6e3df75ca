-- 0013: dormant teams. A team idle for CALLON_SESSION_IDLE (no turn to
-- answer, nothing new for that long), or whose thread Discord archived
-- while it had nothing to answer, is dormant from dormant_since: it is
-- still its thread's team, but counts against no cap on active teams and
-- its thread is not read at every READY. The next message in its thread
-- wakes it, subject to the caps then; woken_at is when it last woke, so
-- the idle sweep does not put it back to sleep on its old turns.
ALTER TABLE sessions
    ADD COLUMN dormant_since timestamptz,
    ADD COLUMN woken_at      timestamptz;
