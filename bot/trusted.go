package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// codeThreadExists is Discord's answer to opening a second thread from a
// message.
const codeThreadExists = 160004

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
	ch, err := b.Channels().channel(ctx, in.ChannelID)
	if err != nil {
		return fmt.Errorf("look up channel: %w", err)
	}
	if ch.Type != discordgo.ChannelTypeGuildText && ch.Type != discordgo.ChannelTypeGuildNews {
		log.Info("a bot's request ignored: teams start from messages in text channels")
		return nil
	}
	reportTo := cmp.Or(req.ReportTo, ch.ID)
	if why := b.botMayReportTo(ctx, in, reportTo); why != "" {
		log.Info("a bot's request refused", "reason", why, "report_to", reportTo)
		return nil
	}
	starter := master.Starter{GuildID: in.GuildID, ChannelID: ch.ID, UserID: in.AuthorID, Roles: in.AuthorRoles, Bot: true}
	if err := b.svc.CheckStart(ctx, starter); err != nil {
		if master.ErrorCode(err) == master.EInternal {
			return err
		}
		log.Info("a bot's request refused", "reason", master.ErrorMessage(err))
		return nil
	}
	thread, err := b.Channels().StartThreadFrom(ctx, ch.ID, in.ID, threadName(req.Goal))
	switch {
	case discordCode(err) == codeThreadExists:
		thread = in.ID // opened before a crash, or by another process: its id is the message's
	case err != nil:
		return fmt.Errorf("open a thread from the bot's message: %w", err)
	}
	sess, roster, err := b.svc.StartSession(ctx, master.NewSession{
		GuildID: in.GuildID, ChannelID: ch.ID, ThreadID: thread, OwnerID: in.AuthorID, Goal: req.Goal, ReportTo: reportTo,
		RequestedByBot: in.AuthorID, RequestMessageID: in.ID, Brief: master.BotBrief(in.AuthorID, ch.ID, req.Goal),
	})
	switch {
	case errors.Is(err, master.ErrSessionActive):
		log.Debug("a bot's request was handled already", "thread_id", thread)
		return nil
	case master.ErrorCode(err) == master.ELimit:
		log.Info("a bot's request refused", "reason", master.ErrorMessage(err))
		if aerr := b.Messenger().Archive(ctx, thread); aerr != nil {
			log.Warn("archive the thread of a refused team", "thread_id", thread, "err", aerr)
		}
		return nil
	case err != nil:
		return err
	}
	log.Info("session started for a trusted bot", "session_id", sess.ID, "thread_id", thread, "report_to", reportTo, "roles", len(roster))
	return nil
}

// botMayReportTo says why a bot's team may not report to a channel, ""
// when it may: the bot must be able to see and post there, and so must
// callon.
func (b *Bot) botMayReportTo(ctx context.Context, in master.Incoming, channelID string) string {
	ch, err := b.Channels().channel(ctx, channelID)
	if err != nil || ch.GuildID != in.GuildID {
		return "no such channel in this server"
	}
	m, err := b.Channels().GuildMember(ctx, in.GuildID, channelID, in.AuthorID)
	if err != nil {
		return "the bot's permissions there could not be checked"
	}
	if !master.MayPost(m.Permissions, ch.IsThread()) {
		return "the bot may not post there"
	}
	if err := b.Channels().CanPost(ctx, channelID); err != nil {
		return "callon may not post there"
	}
	return ""
}
