package main

import (
	"strings"
	"testing"
)

// Every problem of the roles file, those of its shape and those of the
// operator's policy alike, comes in one report at start, each at its
// line, in the file's words.
func TestRolesFileOneReport(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "roles.yaml", `roles:
  - name: researcher
    description: Finds facts
    prompt: You research.
    model: gpt-5-turbo
  - name: Writer
    description: Writes
    prompt: ""
  - name: researcher
    description: Again
    prompt: You research again.
    temprature: 0.2
`)
	env := map[string]string{"CALLON_ENV_FILE": "-", "DISCORD_TOKEN": "t", "OPENAI_API_KEY": "k",
		"DATABASE_URL": "postgres://u@127.0.0.1:1/callon", "CALLON_ROLES_FILE": path}
	_, errOut, err := runCmd(t, env)
	if err == nil {
		t.Fatal("callon started with a broken roles file")
	}
	for _, want := range []string{
		"CALLON_ROLES_FILE: " + path + ": 5 problems:",
		`line 2: default roles: role "researcher": the model "gpt-5-turbo" is not allowed`,
		`line 6: default roles: role "Writer": the name "Writer" is not a lowercase slug`,
		`line 6: default roles: role "Writer": the prompt is empty`,
		`line 9: default roles: role "researcher" appears twice (first at line 2)`,
		`line 12: roles[3]: unknown key "temprature" (did you mean "temperature"?)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
