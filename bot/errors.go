package bot

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/callonbot/callon/master"
)

// somethingWrong is what a member reads when a command fails for a reason
// that is not theirs to fix.
const somethingWrong = "Sorry, something went wrong on my side. Please try again in a moment."

// errorText turns any error a command met into what the member reads: the
// safe message of a *master.Error (a problem with their input marked ❌),
// or, for any other error, a generic sentence, the error being logged
// with the interaction.
func (b *Bot) errorText(i *discordgo.InteractionCreate, err error) string {
	switch master.ErrorCode(err) {
	case master.EInternal:
		b.log.Error("command failed", "command", commandName(i), "interaction_id", i.ID,
			"guild_id", i.GuildID, "channel_id", i.ChannelID, "err", err)
		return somethingWrong
	case master.EInvalid:
		return "❌ " + sentence(master.ErrorMessage(err))
	default:
		return master.ErrorMessage(err)
	}
}

// commandName names the command of an interaction, for logs.
func commandName(i *discordgo.InteractionCreate) string {
	if i.Type == discordgo.InteractionApplicationCommand || i.Type == discordgo.InteractionApplicationCommandAutocomplete {
		return i.ApplicationCommandData().Name
	}
	return i.Type.String()
}

// describeAuthError says what to do about an error Discord gave because
// of the bot token; other errors pass unchanged.
func describeAuthError(err error) error {
	var rerr *discordgo.RESTError
	if errors.As(err, &rerr) && rerr.Response != nil && rerr.Response.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("DISCORD_TOKEN was rejected by Discord (HTTP 401): copy the bot token again, or reset it, " +
			"on the Developer Portal's Bot page (https://discord.com/developers/applications → your app → Bot)")
	}
	return err
}

// describeGatewayError says what to do about a gateway connection Discord
// closed for good (close codes it does not want a reconnect after), and
// about a rejected token; other errors pass unchanged.
func describeGatewayError(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return describeAuthError(err)
	}
	switch ce.Code {
	case 4004:
		return errors.New("DISCORD_TOKEN was rejected by Discord (gateway close 4004, authentication failed): copy the bot token again, " +
			"or reset it, on the Developer Portal's Bot page (https://discord.com/developers/applications → your app → Bot)")
	case 4014:
		return errors.New("the Message Content intent is not enabled for this bot (gateway close 4014, disallowed intents): turn on " +
			"Message Content Intent in the Developer Portal (your app → Bot → Privileged Gateway Intents), then start callon again")
	case 4013:
		return fmt.Errorf("the gateway refused callon's intents as invalid (close 4013), a bug in callon; please report it: %w", err)
	case 4011:
		return errors.New("the gateway requires sharding for this bot (close 4011): it is in too many servers for one gateway connection")
	case 4010:
		return errors.New("the gateway refused the shard callon identified with (close 4010)")
	case 4012:
		return fmt.Errorf("the gateway refused its API version (close 4012): update callon: %w", err)
	}
	return err
}
