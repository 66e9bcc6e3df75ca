package main

import (
	"context"
	"errors"
	"log/slog"
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

// configuredModels are the models callon doctor and the bot at start
// check: every model of the configuration, each named by the first
// setting that names it.
func configuredModels(cfg config.Config) []llm.Need {
	var out []llm.Need
	for _, u := range modelUses(cfg) {
		out = append(out, llm.Need{Model: u.model, Setting: u.from[0]})
	}
	return out
}
