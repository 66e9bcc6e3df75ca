package workers

import (
	"github.com/callonbot/callon/internal/golden"

	"fmt"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
)

func renderMessages(msgs []master.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "=== %s\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

// roleNamed returns the default role called name.
func roleNamed(t *testing.T, name string) master.Role {
	t.Helper()
	for _, r := range master.DefaultRoles() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no default role %q", name)
	return master.Role{}
}

func TestPromptGolden(t *testing.T) {
	t.Parallel()
	task := master.Task{ID: 12, Role: "writer", Instruction: "Draft the beta announcement.\n"}
	in := TaskInput{
		Goal: "Launch the beta",
		Role: roleNamed(t, "writer"),
		Deps: []master.Task{
			{ID: 10, Role: "researcher", State: master.TaskDone, Result: "Features: A, B.\n"},
			{ID: 11, Role: "planner", State: master.TaskDone, Result: "1. Announce\n2. Ship"},
		},
	}
	golden.Check(t, "prompt.golden", renderMessages(messages(task, in, false, false, "")))
}

func TestSystemPrompt(t *testing.T) {
	t.Parallel()
	researcher := roleNamed(t, "researcher")
	got := systemPrompt(master.Task{Role: "researcher"}, TaskInput{Goal: " Launch the beta\n", Role: researcher}, false, "")
	if want := "You are the researcher of a team working on: Launch the beta\n\n" + researcher.Prompt + "\n\n"; !strings.HasPrefix(got, want) {
		t.Errorf("system prompt starts\n%q\nwant it to start\n%q", got, want)
	}
	for _, r := range master.DefaultRoles() {
		if r.Name != researcher.Name && strings.Contains(got, r.Prompt) {
			t.Errorf("system prompt holds the %s's prompt", r.Name)
		}
	}
	for _, word := range []string{ToolReport, ToolProgress, "self-contained", "cannot talk to the user"} {
		if !strings.Contains(got, word) {
			t.Errorf("system prompt does not mention %q", word)
		}
	}
}

func TestUserMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxDepChars+500)
	tests := []struct {
		name    string
		deps    []master.Task
		want    []string // substrings, in order
		notWant []string
	}{
		{name: "no dependencies", want: []string{"Compare the options."}, notWant: []string{"###"}},
		{name: "results headed by role and task id",
			deps: []master.Task{
				{ID: 3, Role: "researcher", State: master.TaskDone, Result: "Option A is cheaper."},
				{ID: 4, Role: "planner", State: master.TaskDone, Result: "Plan: do A."},
			},
			want: []string{"Compare the options.", "### researcher (task #3)\nOption A is cheaper.", "### planner (task #4)\nPlan: do A."}},
		{name: "long result truncated",
			deps: []master.Task{{ID: 5, Role: "engineer", State: master.TaskDone, Result: long}},
			want: []string{"### engineer (task #5)\n" + strings.Repeat("x", maxDepChars-1) + "…"}, notWant: []string{long}},
		{name: "dependency not done shows its state and error",
			deps: []master.Task{{ID: 6, Role: "reviewer", State: master.TaskFailed, Error: "model error: boom"}},
			want: []string{"### reviewer (task #6, failed)\nmodel error: boom"}},
		{name: "empty result",
			deps: []master.Task{{ID: 7, Role: "writer", State: master.TaskDone}},
			want: []string{"### writer (task #7)\n(no result)"}},
	}
	for _, tt := range tests {
		got := userMessage(master.Task{Instruction: "Compare the options."}, tt.deps)
		rest := got
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: user message\n%s\nlacks (in order) %q", tt.name, got, w)
				break
			}
			rest = rest[i+len(w):]
		}
		for _, w := range tt.notWant {
			if strings.Contains(got, w) {
				t.Errorf("%s: user message holds %.40q", tt.name, w)
			}
		}
	}
}

func TestFilesHandedToTheTask(t *testing.T) {
	t.Parallel()
	in := TaskInput{Goal: "g", Role: roleNamed(t, "researcher"), Attachments: []master.Attachment{
		{ID: 1, Name: "notes.md", Kind: master.KindText, State: master.AttachmentStored, Size: 9, Data: []byte("# Notes\nA")},
		{ID: 2, Name: "photo.png", Kind: master.KindImage, State: master.AttachmentStored, ContentType: "image/png", Size: 4, Data: []byte("\x89PNG")},
	}}
	task := master.Task{Role: "researcher", Instruction: "Read the notes."}
	for _, vision := range []bool{false, true} {
		user := messages(task, in, vision, false, "")[1]
		if !strings.HasPrefix(user.Content, "Read the notes.") || !strings.Contains(user.Content, "----- begin notes.md -----\n# Notes\nA\n----- end notes.md -----") {
			t.Errorf("vision %v: the instruction and the text file are not in %q", vision, user.Content)
		}
		switch {
		case vision && (len(user.Images) != 1 || user.Images[0].Name != "photo.png"):
			t.Errorf("a model with vision got images %+v, want photo.png", user.Images)
		case !vision && (len(user.Images) != 0 || !strings.Contains(user.Content, "photo.png (image/png, 4 bytes): an image; your model cannot see images")):
			t.Errorf("a model without vision got %d images and %q, want a note naming the image", len(user.Images), user.Content)
		}
	}
}
