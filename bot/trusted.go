package bot

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/callonbot/callon/master"
)

// botRequest takes a bot's message that starts with a mention of callon,
// outside a team's thread, as a request to start a team; it reports
// whether it did. Whether callon trusts the bot is checked here, so a bot
// it does not trust costs one query and no goroutine; a trusted bot's
// request is handled off the gateway's goroutine. Anything else a bot
// posts is routed as a message (HandleMessage ignores bots callon does
// not trust).
func (b *Bot) botRequest(log *slog.Logger, in master.Incoming, self string) bool {
	req, ok, perr := master.ParseBotRequest(in.Content, self)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(b.work, 10*time.Second)
	defer cancel()
	if _, err := b.store.ActiveSession(ctx, in.ChannelID); err == nil {
		return false // a trusted bot talking to a team
	}
	log = log.With("bot_id", in.AuthorID)
	trusted, err := b.svc.Trusts(ctx, in.GuildID, in.AuthorID)
	switch {
	case err != nil:
		log.Warn("a bot's request: check whether callon trusts it", "err", err)
		return true
	case !trusted:
		log.Debug("ignored a request from a bot callon does not trust")
		return true
	case perr != nil:
		log.Info("a bot's request ignored", "reason", master.ErrorMessage(perr))
		return true
	}
	b.goWork(time.Minute, func(ctx context.Context) {
		if err := b.startForBot(ctx, log, in, req); err != nil {
			log.Warn("start a team for a bot", "err", err)
		}
	})
	return true
}

// startForBot starts a team for a trusted bot's request, in a thread
// opened from its message, reporting back to its channel (or the one it
// named) with a mention of it. A request callon may not honour gets no
// answer, only a log line: an answer could wake a bot that answers it in
// turn.
func (b *Bot) startForBot(ctx context.Context, log *slog.Logger, in master.Incoming, req master.BotRequest) error {
	_, err := b.launcher().Launch(ctx, master.Launch{
		Entrance: master.FromBot, GuildID: in.GuildID, Channel: in.ChannelID, Message: in.ID,
		UserID: in.AuthorID, Who: "the bot", Present: true, Roles: in.AuthorRoles, Goal: req.Goal, ReportTo: req.ReportTo,
	})
	switch {
	case errors.Is(err, master.ErrSessionActive):
		log.Debug("a bot's request was handled already", "thread_id", in.ID) // a thread from a message has its id
	case master.ErrorCode(err) == master.EInternal:
		return err
	case err != nil:
		log.Info("a bot's request refused", "reason", master.ErrorMessage(err), "report_to", req.ReportTo)
	}
	return nil
}
