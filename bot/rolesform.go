package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// rolesSetForm is /roles set's modal: the role's description, its prompt
// on several lines, its model and its tools. What the command's options gave is in
// the custom_id: name, scope, temperature, max tokens, timeout.
var rolesSetForm = form{prefix: "roles-set:", handle: (*Bot).submitRoleForm}

// Text inputs of the role form; Discord caps an input at 4000 characters.
const (
	formDescription = "description"
	formPrompt      = "prompt"
	formModel       = "model"
	formTools       = "tools"
	maxFormPrompt   = 4000
)

// showRoleForm answers /roles set without a prompt (or a description)
// with a modal to write them in, prefilled with what was given.
func (b *Bot) showRoleForm(i *discordgo.InteractionCreate, sub *discordgo.ApplicationCommandInteractionDataOption) {
	r := roleFromOptions(sub)
	scope := "channel"
	if o := sub.GetOption("scope"); o != nil {
		scope = o.StringValue()
	}
	temp := ""
	if r.Temperature != nil {
		temp = strconv.FormatFloat(float64(*r.Temperature), 'g', -1, 32)
	}
	id := fmt.Sprintf("%s%s:%s:%s:%d:%d", rolesSetForm.prefix, scope, r.Name, temp, r.MaxTokens, int(r.Timeout.Seconds()))
	if len(id) > 100 {
		b.respondEphemeral(i, "❌ That role name is too long for the form; use a shorter one (at most 32 characters).")
		return
	}
	input := func(id, label string, style discordgo.TextInputStyle, value string, required bool, max int) discordgo.MessageComponent {
		return discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{
			CustomID: id, Label: label, Style: style, Value: master.Truncate(value, max), Required: required, MaxLength: max,
		}}}
	}
	title := master.Truncate("Role "+strings.ToLower(strings.TrimSpace(r.Name)), 45)
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	defer cancel()
	err := b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{CustomID: id, Title: title, Components: []discordgo.MessageComponent{
			input(formDescription, "Description (one line: what it is for)", discordgo.TextInputShort, r.Description, true, master.MaxDescriptionLen),
			input(formPrompt, "Prompt (how the role works)", discordgo.TextInputParagraph, r.Prompt, true, min(maxFormPrompt, b.roles.Policy().MaxPromptLen())),
			input(formModel, "Model (empty: the worker model)", discordgo.TextInputShort, r.Model, false, 100),
			input(formTools, "Tools: fetch_url, server.tool, server.*", discordgo.TextInputShort, strings.Join(r.Tools, ", "), false, maxToolsOption),
		}},
	}, discordgo.WithContext(ctx))
	if err != nil {
		b.log.Warn("show the role form", "err", err)
	}
}

// submitRoleForm runs /roles set with what the form and its custom_id
// hold, through the same path as the command, checks included.
func (b *Bot) submitRoleForm(i *discordgo.InteractionCreate, id string) {
	parts := strings.Split(id, ":")
	if len(parts) != 5 {
		b.respondEphemeral(i, "This form is not one callon can read; run /roles set again.")
		return
	}
	if !master.MayManageRoles(i.Member.Permissions) {
		b.respondEphemeral(i, notRoleAdmin)
		return
	}
	str := func(name, v string) *discordgo.ApplicationCommandInteractionDataOption {
		return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: v}
	}
	sub := &discordgo.ApplicationCommandInteractionDataOption{Name: "set", Type: discordgo.ApplicationCommandOptionSubCommand,
		Options: []*discordgo.ApplicationCommandInteractionDataOption{str("scope", parts[0]), str("name", parts[1])}}
	if t, err := strconv.ParseFloat(parts[2], 64); err == nil {
		sub.Options = append(sub.Options, &discordgo.ApplicationCommandInteractionDataOption{Name: "temperature", Type: discordgo.ApplicationCommandOptionNumber, Value: t})
	}
	for n, name := range map[int]string{3: "max_tokens", 4: "timeout"} {
		if v, err := strconv.ParseFloat(parts[n], 64); err == nil && v > 0 {
			sub.Options = append(sub.Options, &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionInteger, Value: v})
		}
	}
	for _, row := range i.ModalSubmitData().Components {
		r, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range r.Components {
			if in, ok := c.(*discordgo.TextInput); ok && in.Value != "" {
				sub.Options = append(sub.Options, str(in.CustomID, in.Value))
			}
		}
	}
	b.runRolesCommand(i, sub)
}
