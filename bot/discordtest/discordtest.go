package discordtest

import (
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/callonbot/callon/bot/discordfake"
)

// The vocabulary of discordfake, for tests.
type (
	// ActionRow is discordfake.ActionRow.
	ActionRow = discordfake.ActionRow
	// Attachment is discordfake.Attachment.
	Attachment = discordfake.Attachment
	// Channel is discordfake.Channel.
	Channel = discordfake.Channel
	// ClickButton is discordfake.ClickButton.
	ClickButton = discordfake.ClickButton
	// CommandOption is discordfake.CommandOption.
	CommandOption = discordfake.CommandOption
	// Component is discordfake.Component.
	Component = discordfake.Component
	// GatewayStats is discordfake.GatewayStats.
	GatewayStats = discordfake.GatewayStats
	// Identify is discordfake.Identify.
	Identify = discordfake.Identify
	// Message is discordfake.Message.
	Message = discordfake.Message
	// Modal is discordfake.Modal.
	Modal = discordfake.Modal
	// Option is discordfake.Option.
	Option = discordfake.Option
	// Overwrite is discordfake.Overwrite.
	Overwrite = discordfake.Overwrite
	// Post is discordfake.Post.
	Post = discordfake.Post
	// Reaction is discordfake.Reaction.
	Reaction = discordfake.Reaction
	// Response is discordfake.Response.
	Response = discordfake.Response
	// ResponseKind is discordfake.ResponseKind.
	ResponseKind = discordfake.ResponseKind
	// Route is discordfake.Route.
	Route = discordfake.Route
	// SlashCommand is discordfake.SlashCommand.
	SlashCommand = discordfake.SlashCommand
	// SubmitOption is discordfake.SubmitOption.
	SubmitOption = discordfake.SubmitOption
	// TextInput is discordfake.TextInput.
	TextInput = discordfake.TextInput
	// UserAttachment is discordfake.UserAttachment.
	UserAttachment = discordfake.UserAttachment
	// Webhook is discordfake.Webhook.
	Webhook = discordfake.Webhook
)

// Constants of discordfake.
const (
	// ResponseCallback is discordfake.ResponseCallback.
	ResponseCallback = discordfake.ResponseCallback
	// ResponseEditOriginal is discordfake.ResponseEditOriginal.
	ResponseEditOriginal = discordfake.ResponseEditOriginal
	// ResponseDeleteOriginal is discordfake.ResponseDeleteOriginal.
	ResponseDeleteOriginal = discordfake.ResponseDeleteOriginal
	// ResponseFollowup is discordfake.ResponseFollowup.
	ResponseFollowup = discordfake.ResponseFollowup
	// ResponseEditFollowup is discordfake.ResponseEditFollowup.
	ResponseEditFollowup = discordfake.ResponseEditFollowup
	// ResponseDeleteFollowup is discordfake.ResponseDeleteFollowup.
	ResponseDeleteFollowup = discordfake.ResponseDeleteFollowup
	// RouteListChannelWebhooks is discordfake.RouteListChannelWebhooks.
	RouteListChannelWebhooks = discordfake.RouteListChannelWebhooks
	// RouteCreateWebhook is discordfake.RouteCreateWebhook.
	RouteCreateWebhook = discordfake.RouteCreateWebhook
	// RouteExecuteWebhook is discordfake.RouteExecuteWebhook.
	RouteExecuteWebhook = discordfake.RouteExecuteWebhook
	// RouteGetGateway is discordfake.RouteGetGateway.
	RouteGetGateway = discordfake.RouteGetGateway
	// RouteGetGatewayBot is discordfake.RouteGetGatewayBot.
	RouteGetGatewayBot = discordfake.RouteGetGatewayBot
	// RouteGetCurrentUser is discordfake.RouteGetCurrentUser.
	RouteGetCurrentUser = discordfake.RouteGetCurrentUser
	// RouteGetCurrentUserGuilds is discordfake.RouteGetCurrentUserGuilds.
	RouteGetCurrentUserGuilds = discordfake.RouteGetCurrentUserGuilds
	// RouteGetCurrentApplication is discordfake.RouteGetCurrentApplication.
	RouteGetCurrentApplication = discordfake.RouteGetCurrentApplication
	// RouteGetOAuth2Application is discordfake.RouteGetOAuth2Application.
	RouteGetOAuth2Application = discordfake.RouteGetOAuth2Application
	// RouteGetGuild is discordfake.RouteGetGuild.
	RouteGetGuild = discordfake.RouteGetGuild
	// RouteGetGuildChannels is discordfake.RouteGetGuildChannels.
	RouteGetGuildChannels = discordfake.RouteGetGuildChannels
	// RouteGetGuildMember is discordfake.RouteGetGuildMember.
	RouteGetGuildMember = discordfake.RouteGetGuildMember
	// RouteListActiveThreads is discordfake.RouteListActiveThreads.
	RouteListActiveThreads = discordfake.RouteListActiveThreads
	// RouteOverwriteGlobalCommands is discordfake.RouteOverwriteGlobalCommands.
	RouteOverwriteGlobalCommands = discordfake.RouteOverwriteGlobalCommands
	// RouteGetGlobalCommands is discordfake.RouteGetGlobalCommands.
	RouteGetGlobalCommands = discordfake.RouteGetGlobalCommands
	// RouteOverwriteGuildCommands is discordfake.RouteOverwriteGuildCommands.
	RouteOverwriteGuildCommands = discordfake.RouteOverwriteGuildCommands
	// RouteGetGuildCommands is discordfake.RouteGetGuildCommands.
	RouteGetGuildCommands = discordfake.RouteGetGuildCommands
	// RouteCreateInteractionResponse is discordfake.RouteCreateInteractionResponse.
	RouteCreateInteractionResponse = discordfake.RouteCreateInteractionResponse
	// RouteCreateFollowup is discordfake.RouteCreateFollowup.
	RouteCreateFollowup = discordfake.RouteCreateFollowup
	// RouteGetOriginalResponse is discordfake.RouteGetOriginalResponse.
	RouteGetOriginalResponse = discordfake.RouteGetOriginalResponse
	// RouteEditOriginalResponse is discordfake.RouteEditOriginalResponse.
	RouteEditOriginalResponse = discordfake.RouteEditOriginalResponse
	// RouteDeleteOriginalResponse is discordfake.RouteDeleteOriginalResponse.
	RouteDeleteOriginalResponse = discordfake.RouteDeleteOriginalResponse
	// RouteGetFollowup is discordfake.RouteGetFollowup.
	RouteGetFollowup = discordfake.RouteGetFollowup
	// RouteEditFollowup is discordfake.RouteEditFollowup.
	RouteEditFollowup = discordfake.RouteEditFollowup
	// RouteDeleteFollowup is discordfake.RouteDeleteFollowup.
	RouteDeleteFollowup = discordfake.RouteDeleteFollowup
	// RouteCreateMessage is discordfake.RouteCreateMessage.
	RouteCreateMessage = discordfake.RouteCreateMessage
	// RouteListMessages is discordfake.RouteListMessages.
	RouteListMessages = discordfake.RouteListMessages
	// RouteGetMessage is discordfake.RouteGetMessage.
	RouteGetMessage = discordfake.RouteGetMessage
	// RouteEditMessage is discordfake.RouteEditMessage.
	RouteEditMessage = discordfake.RouteEditMessage
	// RouteDeleteMessage is discordfake.RouteDeleteMessage.
	RouteDeleteMessage = discordfake.RouteDeleteMessage
	// RouteAddReaction is discordfake.RouteAddReaction.
	RouteAddReaction = discordfake.RouteAddReaction
	// RouteRemoveReaction is discordfake.RouteRemoveReaction.
	RouteRemoveReaction = discordfake.RouteRemoveReaction
	// RouteStartThreadFromMessage is discordfake.RouteStartThreadFromMessage.
	RouteStartThreadFromMessage = discordfake.RouteStartThreadFromMessage
	// RouteStartThread is discordfake.RouteStartThread.
	RouteStartThread = discordfake.RouteStartThread
	// RouteJoinThread is discordfake.RouteJoinThread.
	RouteJoinThread = discordfake.RouteJoinThread
	// RouteGetChannel is discordfake.RouteGetChannel.
	RouteGetChannel = discordfake.RouteGetChannel
	// RouteModifyChannel is discordfake.RouteModifyChannel.
	RouteModifyChannel = discordfake.RouteModifyChannel
	// RouteTriggerTyping is discordfake.RouteTriggerTyping.
	RouteTriggerTyping = discordfake.RouteTriggerTyping
)

// BoolOption is discordfake.BoolOption.
func BoolOption(name string, v bool) CommandOption { return discordfake.BoolOption(name, v) }

// ChannelOption is discordfake.ChannelOption.
func ChannelOption(name, channelID string) CommandOption {
	return discordfake.ChannelOption(name, channelID)
}

// IntegerOption is discordfake.IntegerOption.
func IntegerOption(name string, v int64) CommandOption { return discordfake.IntegerOption(name, v) }

// NumberOption is discordfake.NumberOption.
func NumberOption(name string, v float64) CommandOption { return discordfake.NumberOption(name, v) }

// ShardOf is discordfake.ShardOf.
func ShardOf(guildID string, count int) int { return discordfake.ShardOf(guildID, count) }

// StringOption is discordfake.StringOption.
func StringOption(name, v string) CommandOption { return discordfake.StringOption(name, v) }

// Subcommand is discordfake.Subcommand.
func Subcommand(name string, opts ...CommandOption) CommandOption {
	return discordfake.Subcommand(name, opts...)
}

// SubcommandGroup is discordfake.SubcommandGroup.
func SubcommandGroup(name string, sub CommandOption) CommandOption {
	return discordfake.SubcommandGroup(name, sub)
}

// SubmitLocale is discordfake.SubmitLocale.
func SubmitLocale(locale, guildLocale string) SubmitOption {
	return discordfake.SubmitLocale(locale, guildLocale)
}

// UserOption is discordfake.UserOption.
func UserOption(name, userID string) CommandOption { return discordfake.UserOption(name, userID) }

// WithApplicationID is discordfake.WithApplicationID.
func WithApplicationID(id string) Option { return discordfake.WithApplicationID(id) }

// WithBotUser is discordfake.WithBotUser.
func WithBotUser(id, name string) Option { return discordfake.WithBotUser(id, name) }

// WithGuild is discordfake.WithGuild.
func WithGuild(name string, channels ...string) Option {
	return discordfake.WithGuild(name, channels...)
}

// WithHeartbeatInterval is discordfake.WithHeartbeatInterval.
func WithHeartbeatInterval(d time.Duration) Option { return discordfake.WithHeartbeatInterval(d) }

// WithInteractionDeadline is discordfake.WithInteractionDeadline.
func WithInteractionDeadline(d time.Duration) Option { return discordfake.WithInteractionDeadline(d) }

// WithMaxConcurrency is discordfake.WithMaxConcurrency.
func WithMaxConcurrency(n int) Option { return discordfake.WithMaxConcurrency(n) }

// WithPrivilegedIntents is discordfake.WithPrivilegedIntents.
func WithPrivilegedIntents(enabled discordgo.Intent) Option {
	return discordfake.WithPrivilegedIntents(enabled)
}

// WithPublicBot is discordfake.WithPublicBot.
func WithPublicBot() Option { return discordfake.WithPublicBot() }

// WithRecommendedShards is discordfake.WithRecommendedShards.
func WithRecommendedShards(n int) Option { return discordfake.WithRecommendedShards(n) }

// WithShardingRequired is discordfake.WithShardingRequired.
func WithShardingRequired(n int) Option { return discordfake.WithShardingRequired(n) }

// WithToken is discordfake.WithToken.
func WithToken(token string) Option { return discordfake.WithToken(token) }

// WithTokenLifetime is discordfake.WithTokenLifetime.
func WithTokenLifetime(d time.Duration) Option { return discordfake.WithTokenLifetime(d) }

// WithWaitTimeout is discordfake.WithWaitTimeout.
func WithWaitTimeout(d time.Duration) Option { return discordfake.WithWaitTimeout(d) }

// WithoutPrivilegedIntents is discordfake.WithoutPrivilegedIntents.
func WithoutPrivilegedIntents() Option { return discordfake.WithoutPrivilegedIntents() }

// Server is a discordfake.Server that belongs to a test: what it refuses
// and the waits that time out fail the test.
type Server struct {
	*discordfake.Server
}

// New starts a fake Discord and stops it when the test ends.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := discordfake.Start(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return &Server{s}
}

// must fails the test with err, if any.
func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%v", err)
	}
}

// WaitFor waits until cond returns true and fails the test with what if it
// does not within the wait timeout (see discordfake's WaitFor). Call it
// from the test's goroutine.
func (s *Server) WaitFor(tb testing.TB, cond func() bool, what string) {
	tb.Helper()
	must(tb, s.Server.WaitFor(cond, what))
}

// WaitConnected waits until a gateway connection has identified or resumed.
func (s *Server) WaitConnected(tb testing.TB) {
	tb.Helper()
	must(tb, s.Server.WaitConnected())
}

// interaction wraps ix, failing the test with err.
func interaction(tb testing.TB, ix *discordfake.Interaction, err error) *Interaction {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	return &Interaction{ix}
}

// SlashCommand dispatches an application command (discordfake's
// SlashCommand); a command that does not fit its definition fails the
// test.
func (s *Server) SlashCommand(tb testing.TB, sc SlashCommand) *Interaction {
	tb.Helper()
	ix, err := s.Server.SlashCommand(sc)
	return interaction(tb, ix, err)
}

// Autocomplete dispatches an autocomplete interaction (discordfake's
// Autocomplete).
func (s *Server) Autocomplete(tb testing.TB, sc SlashCommand) *Interaction {
	tb.Helper()
	ix, err := s.Server.Autocomplete(sc)
	return interaction(tb, ix, err)
}

// ClickButton clicks a button of a message (discordfake's ClickButton); a
// button no user could click fails the test.
func (s *Server) ClickButton(tb testing.TB, cb ClickButton) *Interaction {
	tb.Helper()
	ix, err := s.Server.ClickButton(cb)
	return interaction(tb, ix, err)
}

// SubmitModal submits the modal ix showed (discordfake's SubmitModal); a
// submission the user's client would refuse fails the test.
func (s *Server) SubmitModal(tb testing.TB, ix *Interaction, values map[string]string, opts ...SubmitOption) *Interaction {
	tb.Helper()
	sub, err := s.Server.SubmitModal(ix.Interaction, values, opts...)
	return interaction(tb, sub, err)
}

// Interaction is a discordfake.Interaction whose waits fail the test.
type Interaction struct {
	*discordfake.Interaction
}

// WaitModal waits until the bot has shown a modal in answer to the
// interaction and returns it.
func (i *Interaction) WaitModal(tb testing.TB) Modal {
	tb.Helper()
	m, err := i.Interaction.WaitModal()
	must(tb, err)
	return m
}

// WaitResponse waits for the first response and returns it.
func (i *Interaction) WaitResponse(tb testing.TB) Response {
	tb.Helper()
	r, err := i.Interaction.WaitResponse()
	must(tb, err)
	return r
}

// WaitResponses waits until there are at least n responses and returns
// them all.
func (i *Interaction) WaitResponses(tb testing.TB, n int) []Response {
	tb.Helper()
	rs, err := i.Interaction.WaitResponses(n)
	must(tb, err)
	return rs
}

// WaitExpired waits until the deadline has passed without an
// acknowledgement.
func (i *Interaction) WaitExpired(tb testing.TB) {
	tb.Helper()
	must(tb, i.Interaction.WaitExpired())
}

// OnAck makes f run each time the server accepts the first callback of an
// interaction (discordfake's OnAck); nil removes it.
func (s *Server) OnAck(f func(*Interaction)) {
	if f == nil {
		s.Server.OnAck(nil)
		return
	}
	s.Server.OnAck(func(ix *discordfake.Interaction) { f(&Interaction{ix}) })
}
