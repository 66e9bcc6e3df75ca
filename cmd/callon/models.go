package main

import (
	"cmp"
	"log/slog"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm"
)

// modelRouter is the process's one client of every model provider: the
// OPENAI_* server and the named providers, bounded together by
// CALLON_LLM_CONCURRENCY.
func modelRouter(cfg config.Config, log *slog.Logger) *llm.Router {
	lim := cfg.Limits
	return llm.NewRouter(llm.Config{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIKey, MaxConcurrent: lim.LLMConcurrency,
		MaxRetries:  cmp.Or(lim.LLMRetries, -1), // llm reads 0 as its default and a negative as none
		ToolDialect: cfg.ToolDialect}, providerConfigs(cfg), log)
}
