-- 0012: reading roles' reliability from their task rows (#22), cheaply.
--
-- The master's pre-send check reads a role's latest ended tasks with the
-- roster, before every decision: newest first by role, a bounded number.
CREATE INDEX tasks_role_ended_idx ON tasks (role, ended_at DESC, id DESC) WHERE ended_at IS NOT NULL;
-- The dashboard's roles table and day counts read the tasks that ended
-- within a window, over every role.
CREATE INDEX tasks_ended_idx ON tasks (ended_at) WHERE ended_at IS NOT NULL;
