package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	scrub "github.com/callonbot/callon/redact"
)

// MCPServer is an MCP server the roles file declares under mcp_servers.
// Its tool T is offered to a role's model as the function "<Name>__T".
// Exactly one of Command (stdio) and URL (Streamable HTTP) is set. The
// ${VAR}s of Command, Env, URL and Headers are expanded; Env and Headers
// may hold secrets, and LogValue leaves their values out.
type MCPServer struct {
	Name     string
	Command  []string          // stdio: the program and its arguments
	Env      map[string]string // stdio: added to the server's minimal environment
	URL      string            // Streamable HTTP endpoint
	Headers  map[string]string // Streamable HTTP: sent with every request
	Approval MCPApproval
	// Guilds are the Discord servers whose roles may use its tools.
	Guilds GuildGrant
	// Approvers are Discord role ids: with any, only a member holding one
	// decides on a call of its tools, and never the team's owner.
	Approvers []string
	// ReadsPrivate marks tools that read private data (files, databases,
	// mail): every tool unless the roles file says otherwise. SendsOut
	// marks tools that send data out of callon, as fetch_url does. A role
	// holding both kinds has its outbound calls approved by a person (see
	// SECURITY.md, "The lethal combination").
	ReadsPrivate, SendsOut ToolMark
}

// MCPApproval says which of a server's tools wait for a person's approval
// before each call.
type MCPApproval struct {
	All   bool     // approval: required
	Tools []string // approval: [tool, ...]
}

// LogValue describes the server without its environment values, header
// values or URL credentials.
func (s MCPServer) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("name", s.Name)}
	if len(s.Command) > 0 {
		attrs = append(attrs, slog.String("command", s.Command[0]), slog.Any("env", sortedKeys(s.Env)))
	} else {
		attrs = append(attrs, slog.String("url", scrub.URL(s.URL)), slog.Any("headers", sortedKeys(s.Headers)))
	}
	switch {
	case s.Approval.All:
		attrs = append(attrs, slog.String("approval", "required"))
	case len(s.Approval.Tools) > 0:
		attrs = append(attrs, slog.Any("approval", s.Approval.Tools))
	}
	switch {
	case s.Guilds.Implicit:
		attrs = append(attrs, slog.String("guilds", "none named: the terminal's only"))
	case s.Guilds.All:
		attrs = append(attrs, slog.String("guilds", "all"))
	default:
		attrs = append(attrs, slog.Any("guilds", s.Guilds.Guilds))
	}
	if len(s.Approvers) > 0 {
		attrs = append(attrs, slog.Any("approvers", s.Approvers))
	}
	return slog.GroupValue(attrs...)
}

// ToolFetchURL is the built-in tool a role may list beside MCP tools.
const ToolFetchURL = "fetch_url"

var (
	mcpServerName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	mcpToolName   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	envName       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

type mcpServerYAML struct {
	Command  []string          `yaml:"command"`
	Env      map[string]string `yaml:"env"`
	URL      string            `yaml:"url"`
	Headers  map[string]string `yaml:"headers"`
	Approval approvalYAML      `yaml:"approval"`

	Guilds       guildsYAML `yaml:"guilds"`
	Approvers    idsYAML    `yaml:"approvers"`
	ReadsPrivate markYAML   `yaml:"reads_private"`
	SendsOut     markYAML   `yaml:"sends_out"`

	Line int `yaml:"-"`
}

// approvalYAML is `required` or a list of tool names.
type approvalYAML struct {
	all   bool
	tools []string
}

func (a *approvalYAML) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil
	case n.Kind == yaml.ScalarNode && n.Value == "required":
		a.all = true
		return nil
	case n.Kind == yaml.SequenceNode:
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return fmt.Errorf("want `required` or a list of tool names, got a list holding something else at line %d", item.Line)
			}
			a.tools = append(a.tools, item.Value)
		}
		return nil
	}
	return fmt.Errorf("want `required` or a list of tool names")
}

// server checks one mcp_servers entry and expands its ${VAR}s; a nil
// getenv only checks their syntax. Errors never show a value that may
// have come from the environment.
func (y mcpServerYAML) server(name string, getenv func(string) string) (MCPServer, error) {
	s := MCPServer{Name: name}
	if !mcpServerName.MatchString(name) {
		return s, fmt.Errorf("name must be 1 to 32 characters a-z, 0-9 and -")
	}
	hasURL := strings.TrimSpace(y.URL) != ""
	switch {
	case len(y.Command) > 0 && hasURL:
		return s, fmt.Errorf("give either command (stdio) or url (Streamable HTTP), not both")
	case len(y.Command) == 0 && !hasURL:
		return s, fmt.Errorf("needs a command (stdio) or a url (Streamable HTTP)")
	case len(y.Env) > 0 && hasURL:
		return s, fmt.Errorf("env is for command servers; a url server takes headers")
	case len(y.Headers) > 0 && !hasURL:
		return s, fmt.Errorf("headers are for url servers; a command server takes env")
	}
	var err error
	for i, arg := range y.Command {
		if i == 0 && strings.TrimSpace(arg) == "" {
			return s, fmt.Errorf("command: the program is empty")
		}
		if arg, err = expandVars(arg, getenv); err != nil {
			return s, fmt.Errorf("command[%d]: %w", i, err)
		}
		s.Command = append(s.Command, arg)
	}
	if hasURL {
		if s.URL, err = expandVars(strings.TrimSpace(y.URL), getenv); err != nil {
			return s, fmt.Errorf("url: %w", err)
		}
		if u, perr := url.Parse(s.URL); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if getenv != nil || !strings.Contains(y.URL, "${") {
				return s, fmt.Errorf("url: must be an http:// or https:// URL")
			}
		}
	}
	if s.Env, err = expandMap("env", y.Env, envName, getenv); err != nil {
		return s, err
	}
	if s.Headers, err = expandMap("headers", y.Headers, headerName, getenv); err != nil {
		return s, err
	}
	s.Approval.All = y.Approval.all
	for _, t := range y.Approval.tools {
		t = strings.TrimSpace(t)
		if !mcpToolName.MatchString(t) {
			return s, fmt.Errorf("approval: %q is not a tool name", t)
		}
		s.Approval.Tools = append(s.Approval.Tools, t)
	}
	return s, y.grants(&s)
}

// expandMap checks a map's keys against key and expands its values.
func expandMap(field string, m map[string]string, key *regexp.Regexp, getenv func(string) string) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if !key.MatchString(k) {
			return nil, fmt.Errorf("%s: %q is not a valid name", field, k)
		}
		v, err := expandVars(m[k], getenv)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", field, k, err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%s.%s: the value holds a line break or NUL", field, k)
		}
		out[k] = v
	}
	return out, nil
}

// expandVars replaces each ${NAME} in s with getenv(NAME); any other $
// is kept as it is, so arguments such as regular expressions survive. An
// unset or empty variable is an error naming it. A nil getenv only checks
// the syntax.
func expandVars(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ (write ${NAME})")
		}
		name := s[i+2 : i+j]
		if !envName.MatchString(name) {
			return "", fmt.Errorf("${%s} is not a variable reference (write ${NAME})", name)
		}
		b.WriteString(s[:i])
		if getenv == nil {
			b.WriteString(s[i : i+j+1])
		} else {
			v := getenv(name)
			if v == "" {
				return "", fmt.Errorf("uses ${%s}, which is not set", name)
			}
			b.WriteString(v)
		}
		s = s[i+j+1:]
	}
}

// roleTools checks a role's tools list against the declared servers and
// drops duplicates.
func roleTools(list []string, servers map[string]mcpServerYAML) ([]string, error) {
	var out []string
	var errs []error
	for _, t := range list {
		t = strings.TrimSpace(t)
		if err := checkToolEntry(t, servers); err != nil {
			errs = append(errs, fmt.Errorf("tools: %q: %w", t, err))
			continue
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, errors.Join(errs...)
}

func checkToolEntry(t string, servers map[string]mcpServerYAML) error {
	if t == ToolFetchURL {
		return nil
	}
	server, tool, ok := strings.Cut(t, ".")
	switch {
	case !ok:
		return fmt.Errorf("not a tool: want %s, <server>.<tool> or <server>.*", ToolFetchURL)
	case tool != "*" && !mcpToolName.MatchString(tool):
		return fmt.Errorf("%q is not a tool name (or * for every tool of the server)", tool)
	}
	if _, ok := servers[server]; !ok {
		return fmt.Errorf("no MCP server %q in mcp_servers", server)
	}
	return nil
}
