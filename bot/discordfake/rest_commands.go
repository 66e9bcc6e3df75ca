package discordfake

import (
	"cmp"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// commandNameRE is Discord's rule for slash command and option names; they
// must also be lowercase.
var commandNameRE = regexp.MustCompile(`^[-_'\p{L}\p{N}]{1,32}$`)

// commandDef is the part of a command the server checks.
type commandDef struct {
	localized
	Name        string      `json:"name"`
	Type        int         `json:"type"`
	Description string      `json:"description"`
	Options     []optionDef `json:"options"`
}

type optionDef struct {
	localized
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Type         int               `json:"type"`
	Required     bool              `json:"required"`
	Autocomplete bool              `json:"autocomplete"`
	Choices      []json.RawMessage `json:"choices"`
	Options      []optionDef       `json:"options"`
}

// overwriteCommands is PUT /applications/{app}/commands and
// PUT /applications/{app}/guilds/{g}/commands. Commands keep their ids
// across overwrites when their name and type stay, as on Discord.
func (s *Server) overwriteCommands(r *request) (int, any, *apiError) {
	var raws []map[string]any
	var defs []commandDef
	if json.Unmarshal(r.body, &raws) != nil || json.Unmarshal(r.body, &defs) != nil {
		return fail(&apiError{status: 400, Code: 50035, Message: "Invalid Form Body",
			Errors: map[string]any{"_errors": []any{map[string]any{"code": "BASE_TYPE_BAD_TYPE", "message": "Must be an array of application commands."}}}})
	}
	if e := validateCommands(defs); e != nil {
		return fail(e)
	}
	guildID, e := s.commandScopeLocked(r)
	if e != nil {
		return fail(e)
	}
	old := map[string]string{}
	for _, c := range s.commands[guildID] {
		old[commandKey(c.def.Name, int(c.def.Type))] = c.def.ID
	}
	cmds := make([]*command, 0, len(raws))
	out := make([]any, 0, len(raws))
	for i, raw := range raws {
		typ := max(defs[i].Type, 1)
		raw["id"] = cmp.Or(old[commandKey(defs[i].Name, typ)], s.newID())
		raw["application_id"] = s.cfg.appID
		raw["version"] = s.newID()
		raw["type"] = typ
		if guildID != "" {
			raw["guild_id"] = guildID
		}
		if _, ok := raw["default_member_permissions"]; !ok {
			raw["default_member_permissions"] = nil
		}
		if raw["options"] == nil {
			delete(raw, "options")
		}
		data, _ := json.Marshal(raw)
		var def discordgo.ApplicationCommand
		_ = json.Unmarshal(data, &def)
		cmds = append(cmds, &command{guildID: guildID, def: &def, raw: raw})
		out = append(out, raw)
	}
	s.commands[guildID] = cmds
	s.notifyLocked()
	return ok(out)
}

// commandScopeLocked returns the guild id of a command route ("" for the
// global commands), checking the application and the guild.
func (s *Server) commandScopeLocked(r *request) (string, *apiError) {
	guildID := r.PathValue("g")
	if r.PathValue("app") != s.cfg.appID || (guildID != "" && s.guildLocked(guildID) == nil) {
		return "", errMissingAccess()
	}
	return guildID, nil
}

func commandKey(name string, typ int) string { return strconv.Itoa(typ) + "/" + name }

// getCommands is GET /applications/{app}/commands and its guild variant.
func (s *Server) getCommands(r *request) (int, any, *apiError) {
	guildID, e := s.commandScopeLocked(r)
	if e != nil {
		return fail(e)
	}
	out := []any{}
	for _, c := range s.commands[guildID] {
		out = append(out, c.raw)
	}
	return ok(out)
}

func validateCommands(defs []commandDef) *apiError {
	seen := map[string]bool{}
	chatInput := 0
	for i, d := range defs {
		idx := strconv.Itoa(i)
		typ := max(d.Type, 1)
		key := commandKey(d.Name, typ)
		if seen[key] {
			return formError("APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique", idx, "name")
		}
		seen[key] = true
		switch typ {
		case 1:
			chatInput++
			if e := checkName(d.Name, idx, "name"); e != nil {
				return e
			}
			if e := checkDescription(d.Description, idx, "description"); e != nil {
				return e
			}
			if e := d.localized.check(checkName, idx); e != nil {
				return e
			}
			if e := validateOptions(d.Options, false, false, idx, "options"); e != nil {
				return e
			}
		case 2, 3:
			if e := contextName(d.Name, idx, "name"); e != nil {
				return e
			}
			if e := d.NameLocalizations.check(contextName, idx, "name_localizations"); e != nil {
				return e
			}
			if d.Description != "" || len(d.Options) > 0 || len(d.DescriptionLocalizations) > 0 {
				return formError("APPLICATION_COMMAND_CONTEXT_MENU_INVALID", "Context menu commands cannot have description or options", idx)
			}
		default:
			return formError("BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4}.", idx, "type")
		}
	}
	if chatInput > 100 {
		return formError("BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.", "_errors")
	}
	return nil
}

func checkName(name string, path ...string) *apiError {
	if !commandNameRE.MatchString(name) || strings.ToLower(name) != name {
		return formError("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid", path...)
	}
	return nil
}

func checkDescription(desc string, path ...string) *apiError {
	if n := utf8.RuneCountInString(desc); n < 1 || n > 100 {
		return formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", path...)
	}
	return nil
}

// validateOptions checks one level of options; inGroup and inSub say where
// the level is, since groups hold only subcommands and subcommands hold no
// subcommands.
func validateOptions(opts []optionDef, inGroup, inSub bool, path ...string) *apiError {
	if len(opts) > 25 {
		return formError("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.", path...)
	}
	seen := map[string]bool{}
	sawOptional, sawSub, sawValue := false, false, false
	for i, o := range opts {
		p := append(append([]string(nil), path...), strconv.Itoa(i))
		at := func(field string) []string { return append(append([]string(nil), p...), field) }
		if e := checkName(o.Name, at("name")...); e != nil {
			return e
		}
		if seen[o.Name] {
			return formError("APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS", "Option names must be unique", at("name")...)
		}
		seen[o.Name] = true
		if e := checkDescription(o.Description, at("description")...); e != nil {
			return e
		}
		if e := o.localized.check(checkName, p...); e != nil {
			return e
		}
		if o.Type < 1 || o.Type > 11 {
			return formError("BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}.", at("type")...)
		}
		isSub := o.Type == 1 || o.Type == 2
		if inGroup && o.Type != 1 || inSub && isSub {
			return formError("APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommands and groups cannot be nested this way", at("type")...)
		}
		if isSub {
			sawSub = true
			if e := validateOptions(o.Options, o.Type == 2, o.Type == 1, at("options")...); e != nil {
				return e
			}
		} else {
			sawValue = true
			if len(o.Options) > 0 {
				return formError("APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Only subcommands and groups have options", at("options")...)
			}
			if o.Required && sawOptional {
				return formError("APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options", at("required")...)
			}
			sawOptional = sawOptional || !o.Required
		}
		if len(o.Choices) > 25 {
			return formError("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.", at("choices")...)
		}
		if e := checkChoices(o.Choices, at("choices")...); e != nil {
			return e
		}
		if o.Autocomplete && len(o.Choices) > 0 {
			return formError("APPLICATION_COMMAND_OPTION_CHOICES_AUTOCOMPLETE", "Autocomplete cannot be set with choices", at("autocomplete")...)
		}
	}
	if sawSub && sawValue {
		return formError("APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommands and groups cannot be mixed with other options", path...)
	}
	return nil
}
