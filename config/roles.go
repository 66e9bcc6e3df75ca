package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Roster is one scope's roles in the roles file (CALLON_ROLES_FILE).
type Roster struct {
	GuildID   string // "" for the file's default roster
	ChannelID string // "" for a guild's roster
	Roles     []Role
	// Line is where the roster starts in the roles file (0 when unknown).
	Line int
}

// Role is a role as the roles file defines it. Its content (name, length
// of its prompt, model) is checked against the roles policy when the bot
// starts; Load checks the file's shape.
type Role struct {
	Name        string
	Description string
	Prompt      string
	Model       string // "" for CALLON_WORKER_MODEL
	Temperature *float32
	MaxTokens   int
	Timeout     time.Duration // 0 for CALLON_TASK_TIMEOUT
	// Tools is what the role may call: "fetch_url", "<server>.<tool>" or
	// "<server>.*", each server one of the file's mcp_servers.
	Tools []string
	// Line is where the role starts in the roles file (0 when unknown),
	// for errors found later, such as a tool its server does not list.
	Line int
	// Avatar is the https URL of the role's persona's picture; "" for a
	// generated one.
	Avatar string
}

// The roles file's YAML shape:
//
//	mcp_servers:              # MCP servers whose tools roles may list
//	  <name>: {command: [...], env: {...}} or {url: ..., headers: {...}}
//	roles: [...]              # the default roster
//	guilds:
//	  "<guild id>":
//	    roles: [...]          # the guild's roster
//	    trusted_bots: ["<bot user id>", ...]  # bots callon listens to there
//	    channels:
//	      "<channel id>":
//	        roles: [...]      # the channel's roster
type rolesFileYAML struct {
	Providers  map[string]providerYAML  `yaml:"providers"`
	MCPServers map[string]mcpServerYAML `yaml:"mcp_servers"`
	Roles      []roleYAML               `yaml:"roles"`
	Guilds     map[string]guildYAML     `yaml:"guilds"`
	// OutboundAllow: hosts fetch_url may reach without a person's
	// approval even for a role that also reads private data.
	OutboundAllow []string `yaml:"outbound_allow"`
	// The features of every guild's teams (see featuresYAML).
	Personas *string `yaml:"personas"`
	Memory   *string `yaml:"memory"`
	Review   *string `yaml:"review"`
}

type guildYAML struct {
	Roles       []roleYAML             `yaml:"roles"`
	Channels    map[string]channelYAML `yaml:"channels"`
	TrustedBots []string               `yaml:"trusted_bots"`
	// FetchAllow: private hosts fetch_url may reach for this guild only.
	FetchAllow []string `yaml:"fetch_allow"`
	Personas   *string  `yaml:"personas"`
	Memory     *string  `yaml:"memory"`
	Review     *string  `yaml:"review"`
	Line       int      `yaml:"-"`
}

type channelYAML struct {
	Roles    []roleYAML `yaml:"roles"`
	Personas *string    `yaml:"personas"`
	Memory   *string    `yaml:"memory"`
	Review   *string    `yaml:"review"`
	Line     int        `yaml:"-"`
}

type roleYAML struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Prompt      string   `yaml:"prompt"`
	Model       string   `yaml:"model"`
	Temperature *float32 `yaml:"temperature"`
	MaxTokens   int      `yaml:"max_tokens"`
	Timeout     string   `yaml:"timeout"`
	Tools       []string `yaml:"tools"`
	Avatar      string   `yaml:"avatar"`
	Line        int      `yaml:"-"`
}

// maxRolesFile bounds the roles file: it is configuration, not data.
const maxRolesFile = 1 << 20

// RolesFile is what the roles file declares.
type RolesFile struct {
	// Rosters are the default roster first, then each guild's roster
	// followed by its channels', in id order.
	Rosters []Roster
	// MCPServers are the file's mcp_servers, in name order.
	MCPServers []MCPServer
	// Providers are the file's model providers, in name order.
	Providers []Provider
	// TrustedBots are the bots callon listens to in a guild, by guild id.
	TrustedBots map[string][]string
	// FetchAllow are the private hosts fetch_url may reach for one guild
	// only, by guild id (CALLON_FETCH_ALLOW's are every guild's).
	FetchAllow map[string][]string
	// OutboundAllow are the hosts fetch_url may reach without approval
	// even for a role that also reads private data.
	OutboundAllow []string
	// Features are what the file's scopes say of their teams' features,
	// the top level first, then each guild followed by its channels.
	Features []Features
}

// loadRolesFile reads and parses the roles file at path, expanding
// ${VAR}s through getenv. Its error is a *RolesFileError naming the file
// and, at each line, what is wrong there. With problems, it still
// returns what parsed, so that the roles that are right can be checked
// too.
func loadRolesFile(path string, getenv func(string) string) (RolesFile, error) {
	fileErr := func(text string) error {
		return &RolesFileError{Path: path, Problems: []Problem{{Text: text}}}
	}
	f, err := os.Open(path)
	if err != nil {
		return RolesFile{}, fileErr(fmt.Sprintf("cannot read it: %v", errors.Unwrap(err)))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRolesFile+1))
	if err != nil {
		return RolesFile{}, fileErr(fmt.Sprintf("cannot read it: %v", err))
	}
	if len(data) > maxRolesFile {
		return RolesFile{}, fileErr(fmt.Sprintf("it is larger than %d bytes", maxRolesFile))
	}
	rf, err := ParseRolesFile(data, getenv)
	var rfe *RolesFileError
	if errors.As(err, &rfe) {
		rfe.Path = path
	}
	return rf, err
}

// ParseRoles parses a roles file and returns its rosters: its default
// roster first, then each guild's roster followed by its channels', in id
// order. Unknown keys, ids that are not Discord ids, bad timeouts,
// scopes without roles and tools naming undeclared MCP servers are errors.
// It checks the MCP servers' shape but, returning only rosters, leaves
// their ${VAR}s unexpanded; ParseRolesFile expands them.
func ParseRoles(data []byte) ([]Roster, error) {
	rf, err := parseRolesFile(data, nil)
	return rf.Rosters, err
}

// ParseRolesFile parses a roles file: its rosters as ParseRoles does, and
// its MCP servers with their ${VAR}s expanded through getenv. A variable
// that is unset or empty is an error naming the server and the variable,
// never its value. The error is a *RolesFileError with every problem
// found, each at its line; what parsed is returned with it.
func ParseRolesFile(data []byte, getenv func(string) string) (RolesFile, error) {
	if getenv == nil {
		return RolesFile{}, errors.New("no getenv to expand ${VAR}s with")
	}
	return parseRolesFile(data, getenv)
}

// parseRolesFile parses a roles file; a nil getenv leaves ${VAR}s as
// they are, after checking their syntax.
func parseRolesFile(data []byte, getenv func(string) string) (RolesFile, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return RolesFile{}, &RolesFileError{Problems: []Problem{yamlError(err)}}
	}
	var doc rolesFileYAML
	d := &decoder{}
	if len(root.Content) > 0 {
		d.decode(root.Content[0], reflect.ValueOf(&doc).Elem(), "")
	}
	var rf RolesFile
	for _, name := range sortedKeys(doc.Providers) {
		p, err := doc.Providers[name].provider(name, getenv)
		if err != nil {
			d.addf(doc.Providers[name].Line, "providers."+name, "%v", err)
			continue
		}
		rf.Providers = append(rf.Providers, p)
	}
	for _, name := range sortedKeys(doc.MCPServers) {
		srv, err := doc.MCPServers[name].server(name, getenv)
		if err != nil {
			d.addf(doc.MCPServers[name].Line, "mcp_servers."+name, "%v", err)
			continue
		}
		rf.MCPServers = append(rf.MCPServers, srv)
	}
	add := func(guildID, channelID string, roles []roleYAML, line int) {
		r := Roster{GuildID: guildID, ChannelID: channelID, Line: line}
		where := scopeName(guildID, channelID)
		if len(roles) == 0 {
			d.addf(line, where, "no roles (a roster needs at least one; leave the entry out to fall back to the next source)")
			return
		}
		for i, y := range roles {
			role, err := y.role(doc.MCPServers)
			if err != nil {
				name := strings.TrimSpace(y.Name)
				if name == "" {
					name = "#" + strconv.Itoa(i+1)
				}
				for _, e := range unjoin(err) {
					d.addf(y.Line, where, "role %q: %v", name, e)
				}
				continue
			}
			r.Roles = append(r.Roles, role)
		}
		rf.Rosters = append(rf.Rosters, r)
	}
	addFeatures := func(guildID, channelID string, y featuresYAML, line int) {
		if !y.set() {
			return
		}
		f, err := y.features(guildID, channelID)
		if err != nil {
			d.addf(line, scopeName(guildID, channelID), "%v", err)
			return
		}
		rf.Features = append(rf.Features, f)
	}
	top := featuresYAML{doc.Personas, doc.Memory, doc.Review}
	addFeatures("", "", top, lineOf(root, featuresKey(top)))
	if doc.Roles != nil {
		add("", "", doc.Roles, lineOf(root, "roles"))
	}
	for _, gid := range sortedKeys(doc.Guilds) {
		g := doc.Guilds[gid]
		if !isSnowflake(gid) {
			d.addf(g.Line, "guilds", "%q is not a numeric Discord id (quote ids: \"123…\")", gid)
			continue
		}
		gf := featuresYAML{g.Personas, g.Memory, g.Review}
		if g.Roles == nil && len(g.Channels) == 0 && len(g.TrustedBots) == 0 && len(g.FetchAllow) == 0 && !gf.set() {
			d.addf(g.Line, "guild "+gid, "no roles and no channels (nor trusted_bots, fetch_allow, personas, memory or review)")
			continue
		}
		addFeatures(gid, "", gf, g.Line)
		if len(g.FetchAllow) > 0 {
			hosts, err := checkHosts(g.FetchAllow)
			if err != nil {
				d.addf(g.Line, "guild "+gid, "fetch_allow: %v", err)
			} else {
				if rf.FetchAllow == nil {
					rf.FetchAllow = map[string][]string{}
				}
				rf.FetchAllow[gid] = hosts
			}
		}
		for _, id := range g.TrustedBots {
			if !isSnowflake(id) {
				d.addf(g.Line, "guild "+gid, "trusted_bots: %q is not a numeric Discord id (quote ids: \"123…\")", id)
				continue
			}
			if rf.TrustedBots == nil {
				rf.TrustedBots = map[string][]string{}
			}
			rf.TrustedBots[gid] = append(rf.TrustedBots[gid], id)
		}
		if g.Roles != nil {
			add(gid, "", g.Roles, g.Line)
		}
		for _, cid := range sortedKeys(g.Channels) {
			c := g.Channels[cid]
			if !isSnowflake(cid) {
				d.addf(c.Line, "guild "+gid, "channel %q is not a numeric Discord id", cid)
				continue
			}
			cf := featuresYAML{c.Personas, c.Memory, c.Review}
			addFeatures(gid, cid, cf, c.Line)
			if c.Roles == nil && cf.set() {
				continue // features only: the channel's roles come from the next source
			}
			add(gid, cid, c.Roles, c.Line)
		}
	}
	if hosts, err := checkHosts(doc.OutboundAllow); err != nil {
		d.addf(lineOf(root, "outbound_allow"), "outbound_allow", "%v", err)
	} else {
		rf.OutboundAllow = hosts
	}
	// A file may declare only MCP servers or providers, for roles set by
	// command; a file that declares nothing is a mistake.
	if len(d.problems) == 0 && len(rf.Rosters) == 0 && len(rf.MCPServers) == 0 && len(rf.Providers) == 0 && len(rf.TrustedBots) == 0 && len(rf.FetchAllow) == 0 &&
		len(rf.Features) == 0 {
		d.addf(0, "", "defines no roles: give a default `roles:` list or `guilds:` (or `mcp_servers:` for roles set by command)")
	}
	if len(d.problems) > 0 {
		return rf, &RolesFileError{Problems: d.problems}
	}
	return rf, nil
}

// lineOf is the line of a top-level key of the file, 0 if it has none.
func lineOf(root yaml.Node, key string) int {
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}

// role checks one role of the file; its error joins every problem.
func (y roleYAML) role(servers map[string]mcpServerYAML) (Role, error) {
	r := Role{
		Name:        strings.TrimSpace(y.Name),
		Description: strings.TrimSpace(y.Description),
		Prompt:      strings.TrimSpace(y.Prompt),
		Model:       strings.TrimSpace(y.Model),
		Temperature: y.Temperature,
		MaxTokens:   y.MaxTokens,
		Line:        y.Line,
	}
	var errs []error
	if s := strings.TrimSpace(y.Timeout); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("timeout %q is not a duration such as \"90s\" or \"5m\"", s))
		}
		r.Timeout = d
	}
	tools, err := roleTools(y.Tools, servers)
	if err != nil {
		errs = append(errs, err)
	}
	r.Tools = tools
	if r.Avatar, err = avatarURL(y.Avatar); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

// scopeName names a scope of the roles file in errors.
func scopeName(guildID, channelID string) string {
	switch {
	case guildID == "":
		return "default roles"
	case channelID == "":
		return "guild " + guildID
	default:
		return "guild " + guildID + ", channel " + channelID
	}
}

func isSnowflake(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// models parses CALLON_MODELS, a comma-separated allowlist. The worker
// model is always on it; unset, so is the master model.
func (p *parser) models(v, worker, master string) []string {
	list := []string{worker}
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		if master != worker {
			list = append(list, master)
		}
		return list
	}
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
		case strings.ContainsAny(m, " \t"):
			p.fail(v, "must be a comma-separated list of model names, got %q", m)
		case !slices.Contains(list, m):
			list = append(list, m)
		}
	}
	return list
}

// unjoin splits an error of errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
