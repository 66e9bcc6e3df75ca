package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ErrNotChecked is the finding on a model whose server did not answer:
// the server's finding says why.
var ErrNotChecked = errors.New("not checked: its server does not answer")

// Need is a model callon is set to call, and the setting that names it
// (CALLON_MASTER_MODEL, CALLON_WORKER_MODEL, a role of the roles file).
type Need struct {
	Model   string
	Setting string
}

// Finding is one result of Router.Check, written for people: what was
// checked and, when something is wrong, what and how to fix it.
type Finding struct {
	// Subject is what was checked: "the model server
	// http://localhost:11434/v1", "the model llama3.1 (CALLON_MASTER_MODEL)".
	Subject string
	// Err says what is wrong and how to fix it; nil when all is well.
	Err error
	// Note remarks on a check that passed without proof (a server that
	// lists no models); "" otherwise.
	Note string
}

// Check asks each model server the needs use for its models once, with
// no retry (an unreachable server fails in seconds, not after minutes of
// backoff), and returns a finding per server and then per need: the
// server answers (else it cannot be reached, or refuses the key, each
// naming the setting to fix), and it lists the model (a server that lists
// none passes with a note). It is the start-up check of `callon chat`
// and of the bot, and what `callon doctor` shows.
func (r *Router) Check(ctx context.Context, needs []Need) []Finding {
	type server struct {
		c       *Client
		setting string
		ids     []string
		err     error
	}
	byClient := map[*Client]*server{}
	var out []Finding
	for _, n := range needs {
		c, provider, _ := r.route(n.Model)
		if byClient[c] != nil {
			continue
		}
		s := &server{c: c, setting: "OPENAI_BASE_URL"}
		if provider != "" {
			s.setting = "the base_url of provider " + provider
		}
		byClient[c] = s
		s.ids, s.err = c.probe(ctx, s.setting)
		out = append(out, Finding{Subject: "the model server " + c.baseURL(), Err: s.err})
	}
	for _, n := range needs {
		c, _, name := r.route(n.Model)
		s := byClient[c]
		f := Finding{Subject: fmt.Sprintf("the model %s (%s)", n.Model, n.Setting)}
		switch {
		case s.err != nil:
			f.Err = ErrNotChecked
		case len(s.ids) == 0:
			f.Note = "the server lists no models, so it was not checked"
		case !slices.Contains(s.ids, name):
			f.Err = fmt.Errorf("%s does not list %q: set %s to one it serves (%s)%s", c.baseURL(), name, n.Setting,
				listSome(s.ids, 8), pullHint(c, name))
		}
		out = append(out, f)
	}
	return out
}

// probe lists the server's models in one attempt, and turns a failure
// into what an operator should do about it.
func (c *Client) probe(ctx context.Context, setting string) ([]string, error) {
	var list openai.ModelsList
	err := c.attempt(ctx, func(ctx context.Context) error {
		var err error
		list, err = c.api.ListModels(ctx)
		return err
	})
	var se *StatusError
	switch {
	case err == nil:
		ids := make([]string, len(list.Models))
		for i, m := range list.Models {
			ids[i] = m.ID
		}
		return ids, nil
	case errors.As(err, &se) && se.Status == http.StatusUnauthorized:
		return nil, fmt.Errorf("%s refused the API key: check OPENAI_API_KEY (%s)", c.baseURL(), redact(se, c.key))
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return nil, fmt.Errorf("%s has no GET /models: check %s, which ends in the API's version, like /v1 (%s)", c.baseURL(), setting, redact(se, c.key))
	case errors.As(err, &se):
		return nil, fmt.Errorf("%s answered GET /models with an error: is %s right? (%s)", c.baseURL(), setting, redact(se, c.key))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("cannot reach %s: it did not answer in time; is it running? set %s", c.baseURL(), setting)
	default:
		return nil, fmt.Errorf("cannot reach %s: is %s running? set %s (%s)", c.baseURL(), serverKind(c), setting, redact(err, c.key))
	}
}

// baseURL is the server's base URL as people may see it: without
// credentials.
func (c *Client) baseURL() string {
	raw := c.cfg.BaseURL
	if raw == "" {
		return openai.DefaultConfig("").BaseURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "the configured model server"
	}
	u.User = nil
	return u.String()
}

// local reports whether the server runs on this machine or beside it:
// most likely Ollama, or another server a newcomer started.
func (c *Client) local() bool {
	u, err := url.Parse(c.baseURL())
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "host.docker.internal" || h == "ollama" || strings.HasPrefix(h, "127.") || h == "::1"
}

// serverKind names the server a newcomer most likely meant.
func serverKind(c *Client) string {
	if c.local() {
		return "Ollama (or your model server)"
	}
	return "the model server"
}

// pullHint suggests fetching a model a local server lacks.
func pullHint(c *Client, model string) string {
	if !c.local() {
		return ""
	}
	return fmt.Sprintf(", or fetch it (Ollama: ollama pull %s)", model)
}

// listSome lists up to n ids, saying how many more there are.
func listSome(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}
