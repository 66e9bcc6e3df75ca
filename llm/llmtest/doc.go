// Package llmtest is a fake OpenAI-compatible server for tests: real
// clients (go-openai, the llm package) talk HTTP to it, and a Script — a Go
// function of the parsed request — decides each answer.
//
// It serves POST /v1/chat/completions (plain JSON, or server-sent events
// when the request says stream: true) and GET /v1/models, checks the
// bearer key, reports token usage in every answer, and records every chat
// request with when it arrived and when it was answered.
//
// A test reads like the story it tells. Here the master delegates to two
// workers, each worker reports, and the master replies with the results:
//
//	researcher := llmtest.Seq(llmtest.Call("report", map[string]any{"status": "done", "result": "three sources"}))
//	writer := llmtest.Seq(llmtest.Delay(50*time.Millisecond,
//		llmtest.Call("report", map[string]any{"status": "done", "result": "a draft"})))
//	master := llmtest.Seq(
//		llmtest.Call("delegate", map[string]any{"tasks": []map[string]any{
//			{"role": "researcher", "instruction": "find sources"},
//			{"role": "writer", "instruction": "draft the intro"},
//		}}),
//		llmtest.Call("reply", map[string]any{"text": "Done: sources and a draft."}),
//	)
//	srv := llmtest.New(t, llmtest.Switch(
//		llmtest.Match("You are the researcher", researcher),
//		llmtest.Match("You are the writer", writer),
//		llmtest.Match("", master), // everything else is the master
//	))
//	client := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: srv.APIKey()}, logger)
//	// … run the system under test with client …
//	recs := srv.WaitRequests(t, 4)
//	if !llmtest.Overlapping(recs[1], recs[2]) {
//		t.Error("workers ran one after the other, want in parallel")
//	}
//
// Faults are replies too: RateLimited(retryAfter), ServerError(),
// Status(code, message), Delay(d, reply), Hang() and RawCall(name, text)
// for malformed arguments. A request a script did not expect (Seq run dry,
// no Switch route) fails the test through the testing.TB given to New.
package llmtest
