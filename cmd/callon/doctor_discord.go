package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// checkDatabase connects to DATABASE_URL and checks that it is a
// database of callon's own and how far its schema is migrated.
func checkDatabase(ctx context.Context, cfg config.Config) []finding {
	const subject = "database"
	if cfg.DatabaseURL == "" {
		return []finding{skip(subject, "not checked: DATABASE_URL is not set")}
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, nil)
	if err != nil {
		return []finding{fail(subject, err.Error(), "")}
	}
	defer st.Close()
	where := config.RedactURL(cfg.DatabaseURL)
	name, err := st.DatabaseName(ctx)
	if err != nil {
		return []finding{fail(subject, err.Error(), "")}
	}
	if name == "postgres" {
		return []finding{fail(subject, `DATABASE_URL names the database "postgres", Postgres's maintenance database`,
			"create a database for callon (createdb callon) and name it in DATABASE_URL")}
	}
	applied, known, err := st.SchemaVersion(ctx)
	switch {
	case err != nil:
		return []finding{fail(subject, err.Error(), "")}
	case applied > known:
		return []finding{fail(subject, fmt.Sprintf("%s: the schema is at version %d, newer than this callon knows (%d)", where, applied, known),
			"run the newer callon that migrated it")}
	case applied < known:
		return []finding{warn(subject, fmt.Sprintf("%s answers; %d of %d migrations applied", where, applied, known),
			"callon applies the others when it starts (or run callon migrate)")}
	}
	return []finding{ok(subject, "%s answers; the schema is up to date (version %d)", where, applied)}
}

// discordLimits bound how many servers and channels checkDiscord reads
// the bot's permissions in: a few REST calls each.
type discordLimits struct {
	guilds, channels int
	// guildOnly, when set, checks the permissions in DISCORD_GUILD_ID
	// only (the bot at start), not in every server of the bot.
	guildOnly bool
	// known lists the channels the database knows teams in; nil opens
	// DATABASE_URL to ask it (see withDatabase).
	known func(ctx context.Context, limit int) ([]master.RoleScope, error)
	// features resolves a channel's features (the roles file's and what
	// was set by command); nil opens DATABASE_URL to ask it, the roles
	// file alone when there is none (see withDatabase).
	features func(ctx context.Context, guildID, channelID string) (master.Features, error)
}

// checkDiscord checks the bot's token, its application's settings in the
// Developer Portal, the servers it is in and its permissions in the
// channels teams use.
func checkDiscord(ctx context.Context, cfg config.Config, lim discordLimits) []finding {
	if cfg.DiscordToken == "" {
		return []finding{skip("Discord", "not checked: DISCORD_TOKEN is not set (callon chat needs none; the bot does)")}
	}
	in, err := bot.NewInspector(cfg.DiscordToken, cfg.DiscordAPIURL)
	if err != nil {
		return []finding{fail("Discord token", err.Error(), "")}
	}
	app, err := in.Application(ctx)
	if errors.Is(err, bot.ErrBadToken) {
		return []finding{fail("Discord token", "rejected by Discord (HTTP 401)",
			"copy the bot token again, or reset it, on the Developer Portal's Bot page (https://discord.com/developers/applications → your app → Bot) and set DISCORD_TOKEN")}
	}
	if err != nil {
		return []finding{fail("Discord", fmt.Sprintf("cannot reach %s: %v", cfg.DiscordAPIURL, err), "check the network (and DISCORD_API_URL, if set)")}
	}
	out := []finding{ok("Discord token", "valid: the bot %s of application %s", app.Name, app.ID)}
	if cfg.DiscordAppID != "" && cfg.DiscordAppID != app.ID {
		out = append(out, fail("DISCORD_APP_ID", fmt.Sprintf("is %s, but the token is the bot of application %s", cfg.DiscordAppID, app.ID),
			"set DISCORD_APP_ID to "+app.ID+", or leave it unset"))
	}
	if app.MessageContent {
		out = append(out, ok("Message Content intent", "enabled"))
	} else {
		out = append(out, fail("Message Content intent", "not enabled: the bot cannot read what people write in a team's thread",
			"turn on Message Content Intent on the Developer Portal's Bot page (Privileged Gateway Intents)"))
	}
	if app.Public {
		out = append(out, warn("Public Bot", "on: anyone with the invite URL can add the bot to their server, and its teams spend your model budget",
			"turn off Public Bot on the Developer Portal's Bot page, unless you mean it"))
	} else {
		out = append(out, ok("Public Bot", "off: only you can add the bot to servers"))
	}
	return append(out, checkServers(ctx, cfg, in, app, lim)...)
}

// checkServers checks that the bot is in DISCORD_GUILD_ID and in the
// servers the roles file names, and computes its permissions there and in
// the channels teams use.
func checkServers(ctx context.Context, cfg config.Config, in *bot.Inspector, app bot.Application, lim discordLimits) []finding {
	invite := bot.InviteURL(app.ID)
	guilds, more, err := in.Guilds(ctx, 200)
	if err != nil {
		return []finding{fail("servers", err.Error(), "")}
	}
	if len(guilds) == 0 {
		return []finding{fail("servers", "the bot is in no server", "invite it: "+invite)}
	}
	name := map[string]string{}
	for _, g := range guilds {
		name[g.ID] = g.Name
	}
	var out []finding
	check := func(id string) bool {
		if _, member := name[id]; member || more {
			return true
		}
		out = append(out, fail("server "+id, "the bot is not in it", "invite it there: "+invite))
		return false
	}
	var ids []string
	switch {
	case cfg.DiscordGuild != "":
		ids = []string{cfg.DiscordGuild}
	case !lim.guildOnly:
		for _, g := range guilds {
			ids = append(ids, g.ID)
		}
	}
	for _, r := range cfg.Roles {
		if r.GuildID != "" && !slices.Contains(ids, r.GuildID) && !lim.guildOnly {
			ids = append(ids, r.GuildID)
		}
	}
	checked := 0
	for _, id := range ids {
		if !check(id) {
			continue
		}
		if checked == lim.guilds {
			out = append(out, skip("servers", fmt.Sprintf("the bot's permissions in %d more servers not checked", len(ids)-checked)))
			break
		}
		checked++
		f, _ := access(ctx, in, app, id, "", "server "+serverName(name, id))
		out = append(out, f)
	}
	lim, done := withDatabase(ctx, cfg, lim)
	defer done()
	for _, c := range teamChannels(ctx, cfg, lim) {
		if cfg.DiscordGuild != "" && c.GuildID != cfg.DiscordGuild {
			continue
		}
		if _, member := name[c.GuildID]; !member && !more {
			continue // named above
		}
		f, a := access(ctx, in, app, c.GuildID, c.ChannelID, "channel "+c.ChannelID+" of "+serverName(name, c.GuildID))
		out = append(out, f)
		if p := personas(ctx, lim.features, c, a, f.subject); p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// withDatabase fills what lim leaves to the database: the channels it
// knows teams in and the features set by command, from one connection to
// DATABASE_URL (the roles file's features alone, and no known channel,
// without one); done closes what it opened.
func withDatabase(ctx context.Context, cfg config.Config, lim discordLimits) (discordLimits, func()) {
	done := func() {}
	file := fileFeatures(cfg.Features)
	if (lim.known == nil || lim.features == nil) && cfg.DatabaseURL != "" {
		// A database that does not answer: its own check says why.
		if st, err := store.Open(ctx, cfg.DatabaseURL, nil); err == nil {
			done = st.Close
			if lim.known == nil {
				lim.known = st.TeamChannels
			}
			if lim.features == nil {
				lim.features = master.NewFeatureConfig(st, file).For
			}
		}
	}
	if lim.features == nil {
		lim.features = master.NewFeatureConfig(fileOnly{}, file).For
	}
	return lim, done
}

// fileOnly is a FeatureStore where nothing was set by command.
type fileOnly struct{}

func (fileOnly) ConfiguredFeatures(context.Context, string, string) ([]master.FeatureEntry, error) {
	return nil, nil
}

func (fileOnly) SetFeatures(context.Context, master.RoleScope, master.FeatureSettings, []string, string) error {
	return errors.New("callon doctor changes nothing")
}

// personas reports, for a channel whose teams have worker personas, whether
// the bot may manage its webhooks; nil when personas are off there (or
// cannot be told: a database not migrated yet) or the channel could not
// be read.
func personas(ctx context.Context, features func(context.Context, string, string) (master.Features, error),
	c master.RoleScope, a *bot.ChannelAccess, subject string) *finding {
	if a == nil {
		return nil
	}
	f, err := features(ctx, c.GuildID, c.ChannelID)
	if err != nil || !f.Personas {
		return nil
	}
	subject += ", personas"
	if a.Webhooks {
		r := ok(subject, "on, and the bot may manage the channel's webhooks")
		return &r
	}
	r := warn(subject, "on, but the bot lacks Manage Webhooks: members' parts are posted in callon's own voice",
		"allow Manage Webhooks for the bot in the channel's settings (Edit Channel → Permissions), or turn personas off there")
	return &r
}

func serverName(names map[string]string, id string) string {
	if n := names[id]; n != "" {
		return n
	}
	return id
}

// access reports the bot's permissions in a server or one of its
// channels, with what it read (nil when it could not).
func access(ctx context.Context, in *bot.Inspector, app bot.Application, guildID, channelID, subject string) (finding, *bot.ChannelAccess) {
	a, err := in.Access(ctx, guildID, channelID, app.BotID)
	if err != nil {
		return fail(subject, err.Error(), ""), nil
	}
	if a.Name != "" {
		subject = "#" + a.Name + " (" + strings.TrimPrefix(subject, "channel "+channelID+" of ") + ")"
	}
	if len(a.Missing) == 0 {
		return ok(subject, "the bot has the permissions teams need"), &a
	}
	fix := "give the bot's role these permissions (Server Settings → Roles), or invite it again: " + bot.InviteURL(app.ID)
	if channelID != "" {
		fix = "allow them for the bot in the channel's settings (Edit Channel → Permissions)"
	}
	return fail(subject, "the bot lacks "+strings.Join(a.Missing, ", "), fix), &a
}

// teamChannels are the channels teams use: the roles file's channel
// rosters, and the channels the database knows (roles set there, active
// teams), at most lim.channels of them.
func teamChannels(ctx context.Context, cfg config.Config, lim discordLimits) []master.RoleScope {
	var out []master.RoleScope
	add := func(c master.RoleScope) {
		if len(out) < lim.channels && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, r := range cfg.Roles {
		if r.ChannelID != "" {
			add(master.RoleScope{GuildID: r.GuildID, ChannelID: r.ChannelID})
		}
	}
	for _, f := range cfg.Features {
		if f.ChannelID != "" {
			add(master.RoleScope{GuildID: f.GuildID, ChannelID: f.ChannelID})
		}
	}
	if lim.known == nil {
		return out
	}
	known, err := lim.known(ctx, lim.channels)
	if err != nil {
		return out // an unmigrated database knows no channel yet
	}
	for _, c := range known {
		add(c)
	}
	return out
}
