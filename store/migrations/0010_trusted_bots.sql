-- 0010: trusted bots (#17). Admins name the other bots callon listens to;
-- a trusted bot may start a team by mentioning callon and talk in team
-- threads, and the team reports back to it by mentioning it.

-- A guild's trusted bots are allow list entries of their own action
-- (/access trust): a bot user, never a role or a channel.
ALTER TABLE access_rules DROP CONSTRAINT access_rules_action_check;
ALTER TABLE access_rules ADD CONSTRAINT access_rules_action_check CHECK (action IN ('start', 'talk', 'trust'));
ALTER TABLE access_rules ADD CONSTRAINT access_rules_trust_user_check CHECK (action <> 'trust' OR kind = 'user');

-- A turn whose message a bot wrote: the master is told so, and a bot's
-- turns per hour in a guild are capped (CALLON_REPORT_CAP).
ALTER TABLE turns ADD COLUMN author_bot boolean NOT NULL DEFAULT false;
CREATE INDEX turns_bot_idx ON turns (guild_id, author_id, created_at) WHERE author_bot;

-- A team a trusted bot started by mentioning callon: the bot, and its
-- message, which the team's reports reply to in that channel.
ALTER TABLE sessions
    ADD COLUMN requested_by_bot   text CHECK (requested_by_bot ~ '^[0-9]{1,20}$'),
    ADD COLUMN request_message_id text CHECK (request_message_id ~ '^[0-9]{1,20}$'),
    ADD CHECK ((requested_by_bot IS NULL) = (request_message_id IS NULL));

-- The one user a message may ping besides the author it replies to: the
-- bot a report is for. allowed_mentions lists only it.
ALTER TABLE outbox ADD COLUMN mention text CHECK (mention ~ '^[0-9]{1,20}$');
