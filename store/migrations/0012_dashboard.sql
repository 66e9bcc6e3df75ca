-- 0012: reading roles' reliability from their task rows, and the dashboard's
-- counts (#22), cheaply.
--
-- The master's pre-send check reads a role's latest ended tasks with the
-- roster, before every decision: newest first by role, a bounded number.
CREATE INDEX tasks_role_ended_idx ON tasks (role, ended_at DESC, id DESC) WHERE ended_at IS NOT NULL;
-- The dashboard's roles table and day counts read the tasks that ended
-- within a window, over every role.
CREATE INDEX tasks_ended_idx ON tasks (ended_at) WHERE ended_at IS NOT NULL;
-- The dashboard's overview: a server's teams that have not ended (of
-- whatever state), and its turns of the day.
CREATE INDEX sessions_open_idx ON sessions (guild_id) WHERE ended_at IS NULL;
CREATE INDEX turns_created_idx ON turns (created_at);
