package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every variable the configuration reads is in README.md and in
// .env.example, except where that makes no sense: a name ending in "_" is
// the prefix of a family (CALLON_PROVIDER_<NAME>_API_KEY), documented by its
// pattern; a deprecated name and CALLON_ENV_FILE (which names the env file
// itself) are in README.md only.
func TestEveryVariableIsDocumented(t *testing.T) {
	t.Parallel()
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	variable := regexp.MustCompile(`"((?:CALLON|DISCORD|OPENAI|LOG|DATABASE)_[A-Z_]+)"`)
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variable.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
	}
	if len(names) < 30 {
		t.Fatalf("found only %d variables in the sources", len(names))
	}
	readmeOnly := map[string]bool{"CALLON_ENV_FILE": true, "CALLON_MAX_WORKERS": true, "CALLON_WORKER_SLOTS": true}
	for _, doc := range []struct{ file, form, family string }{
		{"../README.md", "`%s`", "`%s<NAME>"},
		{"../.env.example", "%s=", "#%s"},
	} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		for name := range names {
			form := doc.form
			switch {
			case strings.HasSuffix(name, "_"):
				form = doc.family
			case readmeOnly[name] && doc.file != "../README.md":
				continue
			}
			if !strings.Contains(string(text), strings.ReplaceAll(form, "%s", name)) {
				t.Errorf("%s does not document %s", doc.file, name)
			}
		}
	}
}
