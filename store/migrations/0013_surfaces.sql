-- 0012: surfaces. A session belongs to the surface people talk to it on:
-- a Discord thread, or the terminal of `callon chat`. Every claim takes
-- only rows of the sessions of the surface a process serves, and a
-- terminal session is served only by the chat process it is attached to
-- (attached_to, that process's processes.owner; a chat that ends leaves
-- it to the next `callon chat --resume`). So a bot, worker processes and
-- any number of chats share one database without taking each other's
-- work.
ALTER TABLE sessions
    ADD COLUMN surface     text NOT NULL DEFAULT 'discord' CHECK (surface IN ('discord', 'terminal')),
    ADD COLUMN attached_to text,
    ADD CONSTRAINT sessions_attached_check CHECK (attached_to IS NULL OR surface = 'terminal');

-- Chats started teams in the pseudo-guild 'terminal' before surfaces
-- existed.
UPDATE sessions SET surface = 'terminal' WHERE guild_id = 'terminal';
