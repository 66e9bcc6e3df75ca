// Package llmfake is a fake OpenAI-compatible server: real clients
// (go-openai, the llm package) talk HTTP to it, and a Script — a Go
// function of the parsed request — decides each answer. It is production
// code (no testing import): `callon chat --demo` answers from a script
// with it, and `callon bench` measures callon against it. Tests use it
// through llm/llmtest, which ties a server to a testing.TB.
//
// It serves POST /v1/chat/completions (plain JSON, or server-sent events
// when the request says stream: true) and GET /v1/models on a loopback
// port, checks the bearer key, reports token usage in every answer, and
// records every chat request with when it arrived and when it was
// answered.
//
// A script reads like the story it tells. Here the master delegates to
// two workers, each worker reports, and the master replies with the
// results:
//
//	researcher := llmfake.Seq(llmfake.Call("report", map[string]any{"status": "done", "result": "three sources"}))
//	writer := llmfake.Seq(llmfake.Delay(50*time.Millisecond,
//		llmfake.Call("report", map[string]any{"status": "done", "result": "a draft"})))
//	master := llmfake.Seq(
//		llmfake.Call("delegate", map[string]any{"tasks": []map[string]any{
//			{"role": "researcher", "instruction": "find sources"},
//			{"role": "writer", "instruction": "draft the intro"},
//		}}),
//		llmfake.Call("reply", map[string]any{"text": "Done: sources and a draft."}),
//	)
//	srv, err := llmfake.Start(llmfake.Switch(
//		llmfake.Match("You are the researcher", researcher),
//		llmfake.Match("You are the writer", writer),
//		llmfake.Match("", master), // everything else is the master
//	))
//	…
//	defer srv.Close()
//	client := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: srv.APIKey()}, logger)
//
// Faults are replies too: RateLimited(retryAfter), ServerError(),
// Status(code, message), Delay(d, reply), Hang() and RawCall(name, text)
// for malformed arguments. A request a script did not expect (Seq run
// dry, no Switch route) is answered 500 and told to OnUnexpected.
package llmfake
