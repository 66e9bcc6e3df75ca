package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every variable the configuration reads is in README.md and in
// .env.example.
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
	for _, doc := range []struct{ file, form string }{{"../README.md", "`%s`"}, {"../.env.example", "%s="}} {
		text, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		for name := range names {
			if !strings.Contains(string(text), strings.ReplaceAll(doc.form, "%s", name)) {
				t.Errorf("%s does not document %s", doc.file, name)
			}
		}
	}
}
