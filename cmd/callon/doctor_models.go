package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/master"
)

// checkModelServer is callon doctor's check of the model server: the
// models (checkModels) and, with probe, whether each one calls tools.
func checkModelServer(ctx context.Context, cfg config.Config, probe bool) []finding {
	// No retries and a short timeout: doctor says what is wrong now.
	model := llm.NewRouter(llm.Config{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIKey, MaxRetries: -1, Timeout: 5 * time.Second, ToolDialect: cfg.ToolDialect},
		providerConfigs(cfg), slog.New(slog.DiscardHandler))
	out := checkModels(ctx, model, cfg)
	if !probe {
		return append(out, skip("tool calls", "not checked: callon doctor --probe-models asks each model for one (a few tokens each)"))
	}
	for _, u := range modelUses(cfg) {
		if slices.ContainsFunc(out, func(f finding) bool {
			return (f.status == statusFail || f.status == statusSkip) && strings.HasPrefix(f.subject, "model "+u.model+" (")
		}) {
			continue // not listed, or its server does not answer: said above
		}
		out = append(out, probeModel(ctx, model, u.model))
	}
	return out
}

// probeModel asks a model for one tool call, as the master and the
// workers need (llm.ProbeTools): callon's models answer through tools.
func probeModel(ctx context.Context, model master.LLM, name string) finding {
	subject := "tool calls of " + name
	p, err := llm.ProbeTools(ctx, model, name)
	if err != nil {
		var me *master.Error
		if errors.As(err, &me) {
			return fail(subject, me.Message, "pick a model that calls tools (docs/models.md)")
		}
		return fail(subject, err.Error(), "")
	}
	if !p.CallsTools {
		return fail(subject, p.Detail, "pick a model that calls tools (docs/models.md lists some)")
	}
	return ok(subject, "it called a test tool (%s)", p.Dialect)
}

// modelUse is a model callon is configured to use, and the settings
// that name it.
type modelUse struct {
	model string
	from  []string
}

// modelUses lists the models of the configuration, each once, with the
// variables (or roles) that name it.
func modelUses(cfg config.Config) []modelUse {
	var out []modelUse
	add := func(model, from string) {
		for i := range out {
			if out[i].model == model {
				if !slices.Contains(out[i].from, from) {
					out[i].from = append(out[i].from, from)
				}
				return
			}
		}
		out = append(out, modelUse{model, []string{from}})
	}
	add(cfg.MasterModel, "CALLON_MASTER_MODEL")
	add(cfg.WorkerModel, "CALLON_WORKER_MODEL")
	for _, m := range cfg.Models {
		add(m, "CALLON_MODELS")
	}
	for _, r := range cfg.Roles {
		for _, role := range r.Roles {
			if role.Model != "" {
				add(role.Model, "role "+role.Name)
			}
		}
	}
	return out
}

// providerURL is the base URL of a provider ("" for OPENAI_BASE_URL's).
func providerURL(cfg config.Config, provider string) (base, variable string) {
	for _, p := range cfg.Providers {
		if p.Name == provider {
			return p.BaseURL, "the provider " + provider + " (CALLON_PROVIDERS or the roles file's providers)"
		}
	}
	return cfg.OpenAIBaseURL, "OPENAI_BASE_URL"
}

// serverFinding says whether a provider answered its list of models.
func serverFinding(cfg config.Config, provider string, ids []string, err error) finding {
	base, variable := providerURL(cfg, provider)
	subject := "model server " + displayURL(base)
	key := "OPENAI_API_KEY"
	if provider != "" {
		key = "CALLON_PROVIDER_" + strings.ToUpper(strings.ReplaceAll(provider, "-", "_")) + "_API_KEY"
	}
	var se *llm.StatusError
	switch {
	case err == nil:
		return ok(subject, "answers; lists %s", plural(len(ids), "model"))
	case errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden):
		return fail(subject, fmt.Sprintf("rejects the API key (HTTP %d)", se.Status), "set "+key+" to a key this server accepts")
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return fail(subject, "has no list of models at this address (HTTP 404)",
			"check "+variable+": it ends in /v1 for OpenAI, Ollama, vLLM and OpenRouter")
	case errors.As(err, &se):
		return fail(subject, err.Error(), "")
	}
	return fail(subject, "cannot reach it: "+err.Error(),
		"is the server running (Ollama: ollama serve)? Set "+variable+" to its address, such as http://localhost:11434/v1")
}

// missingModelFix says how to get a model the server does not list.
func missingModelFix(cfg config.Config, provider, name, variable string, listed []string) string {
	base, _ := providerURL(cfg, provider)
	fix := ""
	if strings.Contains(base, ":11434") || strings.Contains(strings.ToLower(base), "ollama") {
		fix = "pull it (ollama pull " + name + "), or "
	}
	if strings.HasPrefix(variable, "role ") {
		fix += "give " + variable + " a model"
	} else {
		fix += "set " + variable + " to a model"
	}
	if len(listed) > 10 {
		listed = append(listed[:10:10], "…")
	}
	return fix + " the server lists: " + strings.Join(listed, ", ")
}

// displayURL is a base URL without what may be secret in it: its user
// and password and its query.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparseable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
