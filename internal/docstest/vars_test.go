package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var (
	// quotedVar is a variable name in Go source: the configuration reads
	// each one through getenv("…").
	quotedVar = regexp.MustCompile(`"((?:CALLON|DISCORD|OPENAI|LOG|DATABASE)_[A-Z0-9_]*)"`)
	// docVar is a variable named in a doc's inline code.
	docVar = regexp.MustCompile("`((?:CALLON|DISCORD|OPENAI|LOG|DATABASE)_[A-Z0-9_]+(?:<NAME>_[A-Z_]+)?)(?:=[^`]*)?`")
	// envLine is a variable of .env.example, set or commented out.
	envLine = regexp.MustCompile(`(?m)^#?([A-Z][A-Z0-9_]*)=`)
	// composeVar is a variable a compose file interpolates.
	composeVar = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*)`)
)

// deprecated names are still read, with a warning; the reference names
// them beside their new names, .env.example does not.
var deprecated = []string{"CALLON_MAX_WORKERS", "CALLON_WORKER_SLOTS"}

// configVars is every variable the configuration code reads: names ending
// in "_" are the prefix of a family (CALLON_PROVIDER_<NAME>_API_KEY).
func configVars(t *testing.T) map[string]bool {
	t.Helper()
	sources, err := filepath.Glob(filepath.Join(root, "config", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range quotedVar.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
	}
	if len(names) < 30 {
		t.Fatalf("found only %d variables in config/*.go; is the pattern still right?", len(names))
	}
	return names
}

// familySuffixes end the variables of a family: a provider's key and its
// tool dialect.
var familySuffixes = []string{"_API_KEY", "_TOOL_DIALECT"}

// family is how the docs write the family whose prefix is p.
func family(p string) string { return p + "<NAME>_API_KEY" }

// TestEveryVariableIsDocumented: a variable the configuration reads that
// the configuration reference or .env.example does not name fails.
func TestEveryVariableIsDocumented(t *testing.T) {
	t.Parallel()
	ref := read(t, filepath.Join("docs", "configuration.md"))
	example := read(t, ".env.example")
	for _, name := range sortedKeys(configVars(t)) {
		if strings.HasSuffix(name, "_") {
			if !strings.Contains(ref, "`"+family(name)+"`") {
				t.Errorf("docs/configuration.md does not document %s", family(name))
			}
			if !strings.Contains(example, "#"+name) {
				t.Errorf(".env.example does not show the %s… family", name)
			}
			continue
		}
		if !strings.Contains(ref, "`"+name+"`") {
			t.Errorf("docs/configuration.md does not document %s", name)
		}
		if slices.Contains(deprecated, name) || name == "CALLON_ENV_FILE" {
			continue // CALLON_ENV_FILE names the env file itself
		}
		if !regexp.MustCompile(`(?m)^#?` + name + `=`).MatchString(example) {
			t.Errorf(".env.example does not show %s", name)
		}
	}
}

// TestEveryDocumentedVariableIsRead: a variable a doc or .env.example
// names that neither the configuration nor a compose file reads fails
// (a renamed or removed variable left in the docs).
func TestEveryDocumentedVariableIsRead(t *testing.T) {
	t.Parallel()
	read_ := configVars(t)
	composeFiles, err := filepath.Glob(filepath.Join(root, "docker-compose*.yml"))
	if err != nil || len(composeFiles) == 0 {
		t.Fatalf("no compose files (%v)", err)
	}
	compose := map[string]bool{}
	for _, f := range composeFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range composeVar.FindAllStringSubmatch(string(data), -1) {
			compose[m[1]] = true
		}
	}
	known := func(name string) bool {
		if read_[name] || compose[name] {
			return true
		}
		for p := range read_ {
			if !strings.HasSuffix(p, "_") || !strings.HasPrefix(name, p) {
				continue
			}
			for _, suffix := range familySuffixes {
				if name == p+"<NAME>"+suffix || strings.HasSuffix(name, suffix) {
					return true
				}
			}
		}
		return false
	}
	seen := 0
	for _, f := range markdownFiles(t) {
		if f == "CHANGELOG.md" {
			continue // history names variables that were renamed since
		}
		for _, l := range strings.Split(read(t, f), "\n") {
			for _, m := range docVar.FindAllStringSubmatch(l, -1) {
				seen++
				if !known(m[1]) {
					t.Errorf("%s names %s, which callon does not read", f, m[1])
				}
			}
		}
	}
	for _, m := range envLine.FindAllStringSubmatch(read(t, ".env.example"), -1) {
		seen++
		if !known(m[1]) {
			t.Errorf(".env.example sets %s, which neither callon nor a compose file reads", m[1])
		}
	}
	if seen < 100 {
		t.Errorf("found only %d documented variables; is the pattern still right?", seen)
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
