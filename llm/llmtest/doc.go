// Package llmtest runs the fake OpenAI-compatible server of llm/llmfake
// in a test: New ties a server to a testing.TB (closed when the test
// ends; a request the script did not expect fails the test), and
// WaitRequests and WaitAnswered wait on it with the test's failure. The
// script vocabulary (Seq, Switch, Match, Call, Delay…) is llmfake's,
// re-exported here so that tests read as before. It is for tests only:
// production code uses llmfake.
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
package llmtest
