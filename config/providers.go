package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	scrub "github.com/callonbot/callon/redact"
)

// Provider is a named OpenAI-compatible server besides the default one
// (OPENAI_BASE_URL): wherever a model is named (CALLON_MASTER_MODEL,
// CALLON_WORKER_MODEL, roles), "<provider>/<model>" is the model on that
// provider. A model whose first segment names no provider is on the
// default one, so OpenRouter's "vendor/model" ids still work there.
type Provider struct {
	Name    string
	BaseURL string            // including the API version, e.g. http://localhost:11434/v1
	APIKey  string            // secret; "" for servers that need none
	Headers map[string]string // sent with every request (may hold secrets)
	// ToolDialect is "auto" (tool calls a model writes into its text are
	// decoded) or "strict" (tool_calls only); see DefaultToolDialect.
	ToolDialect string
}

// LogValue describes the provider without its key or header values.
func (p Provider) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", p.Name), slog.String("base_url", scrub.URL(p.BaseURL)),
		slog.String("api_key", redact(p.APIKey)), slog.Any("headers", sortedKeys(p.Headers)), slog.String("tool_dialect", p.ToolDialect))
}

var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// providerYAML is a provider in the roles file:
//
//	providers:
//	  ollama:
//	    base_url: http://host.docker.internal:11434/v1
//	    api_key_env: OLLAMA_API_KEY   # optional: the variable holding the key
//	    headers: {X-Title: callon}    # optional; ${VAR}s expand
//	    tool_dialect: auto            # optional: auto or strict
type providerYAML struct {
	BaseURL     string            `yaml:"base_url"`
	APIKeyEnv   string            `yaml:"api_key_env"`
	Headers     map[string]string `yaml:"headers"`
	ToolDialect string            `yaml:"tool_dialect"`
	Line        int               `yaml:"-"`
}

// provider checks and expands one roles-file provider; a nil getenv
// leaves its key unread and its ${VAR}s as they are.
func (y providerYAML) provider(name string, getenv func(string) string) (Provider, error) {
	p := Provider{Name: name, BaseURL: strings.TrimRight(strings.TrimSpace(y.BaseURL), "/")}
	if !providerName.MatchString(name) {
		return p, fmt.Errorf("the name must be a-z, 0-9 and -, at most 32 characters")
	}
	if err := checkHTTPURL(p.BaseURL); err != nil {
		return p, fmt.Errorf("base_url: %w", err)
	}
	if y.APIKeyEnv != "" {
		if !envName.MatchString(y.APIKeyEnv) {
			return p, fmt.Errorf("api_key_env %q is not a variable name", y.APIKeyEnv)
		}
		if getenv != nil {
			if p.APIKey = strings.TrimSpace(getenv(y.APIKeyEnv)); p.APIKey == "" {
				return p, fmt.Errorf("api_key_env: %s is not set", y.APIKeyEnv)
			}
		}
	}
	dialect, err := toolDialect(y.ToolDialect, p.BaseURL)
	if err != nil {
		return p, fmt.Errorf("tool_dialect: %w", err)
	}
	p.ToolDialect = dialect
	p.Headers, err = expandMap("headers", y.Headers, headerName, getenv)
	return p, err
}

// Tool dialects of a provider.
const (
	ToolDialectAuto   = "auto"
	ToolDialectStrict = "strict"
)

// DefaultToolDialect is a provider's tool dialect when none is set:
// strict for OpenAI's API, which always fills tool_calls, auto for every
// other server (local models often write their calls into the text).
func DefaultToolDialect(baseURL string) string {
	if u, err := url.Parse(baseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return ToolDialectStrict
	}
	return ToolDialectAuto
}

// toolDialect checks a tool dialect setting; "" gives the default for
// the server at baseURL.
func toolDialect(v, baseURL string) (string, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "":
		return DefaultToolDialect(baseURL), nil
	case ToolDialectAuto, ToolDialectStrict:
		return v, nil
	}
	return "", fmt.Errorf("must be auto or strict, got %q", v)
}

// checkHTTPURL accepts an absolute http:// or https:// URL.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an http:// or https:// URL, got %q", s)
	}
	return nil
}

// providers reads CALLON_PROVIDERS, "name=base_url,…", each key from
// CALLON_PROVIDER_<NAME>_API_KEY (the name upper-cased, - as _), and
// merges them over the roles file's, an environment entry replacing a
// file entry of the same name. The result is in name order.
func (p *parser) providers(file []Provider) []Provider {
	byName := map[string]Provider{}
	for _, f := range file {
		byName[f.Name] = f
	}
	raw := strings.TrimSpace(p.getenv("CALLON_PROVIDERS"))
	for _, entry := range strings.Split(raw, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, base, ok := strings.Cut(entry, "=")
		name, base = strings.TrimSpace(name), strings.TrimRight(strings.TrimSpace(base), "/")
		switch {
		case !ok:
			p.fail("CALLON_PROVIDERS", "want name=base_url entries separated by commas, got %q", entry)
			continue
		case !providerName.MatchString(name):
			p.fail("CALLON_PROVIDERS", "provider name %q must be a-z, 0-9 and -, at most 32 characters", name)
			continue
		}
		if err := checkHTTPURL(base); err != nil {
			p.fail("CALLON_PROVIDERS", "%s: %v", name, err)
			continue
		}
		prefix := "CALLON_PROVIDER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		dialect, err := toolDialect(p.getenv(prefix+"_TOOL_DIALECT"), base)
		if err != nil {
			p.fail(prefix+"_TOOL_DIALECT", "%v", err)
		}
		byName[name] = Provider{Name: name, BaseURL: base, APIKey: strings.TrimSpace(p.getenv(prefix + "_API_KEY")), ToolDialect: dialect}
	}
	out := make([]Provider, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		out = append(out, byName[name])
	}
	return out
}

// ProviderOf splits a model name into its provider and the model as that
// provider knows it: "" and the name unchanged when its first segment
// names no provider.
func ProviderOf(model string, providers []Provider) (provider, name string) {
	if head, rest, ok := strings.Cut(model, "/"); ok && slices.ContainsFunc(providers, func(p Provider) bool { return p.Name == head }) {
		return head, rest
	}
	return "", model
}
