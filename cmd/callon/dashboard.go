package main

import (
	"log/slog"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/dashboard"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// The store is the dashboard's port.
// newDashboard is the dashboard of the configuration: the operator's
// token, and Discord OAuth2 for server admins when a client secret is
// set; wake is the listener's, guildName the bot's (nil in a process
// without the bot: ids are shown).
func newDashboard(cfg config.Config, st *store.Store, wake <-chan string, prices master.Prices,
	guildName func(string) string, log *slog.Logger) *dashboard.Dashboard {
	dc := dashboard.Config{Token: cfg.Dashboard.Token, Prices: prices, DailyBudget: cfg.Caps.GuildDailyTokens,
		Wake: wake, GuildName: guildName}
	if cfg.Dashboard.OAuth() {
		dc.OAuth = &dashboard.OAuth{ClientID: cfg.DiscordAppID, ClientSecret: cfg.Dashboard.ClientSecret,
			RedirectURL: cfg.Dashboard.RedirectURL, DiscordURL: cfg.DiscordAPIURL}
	}
	return dashboard.New(dc, st, log)
}
