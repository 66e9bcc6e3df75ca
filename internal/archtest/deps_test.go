package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/callonbot/callon"

// pkg is what go list tells of one package.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string // its non-test files
	Imports    []string // what its non-test files import
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// under reports whether path is dir or a package below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// TestDependencyRules checks the rules of ARCHITECTURE.md, "Dependency
// rules", on every package's non-test imports.
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	rules := []struct {
		name    string
		applies func(importer, imported string) bool // true: a violation
	}{
		{"master imports of callon only internal/proc, the loops' leaf helpers", func(from, to string) bool {
			return from == module+"/master" && under(to, module) && to != module+"/internal/proc"
		}},
		{"internal/proc imports nothing of callon: the core uses it", func(from, to string) bool {
			return from == module+"/internal/proc" && under(to, module)
		}},
		{"bot/render imports of callon only master, and no Discord SDK: it writes text, the terminal's too", func(from, to string) bool {
			return from == module+"/bot/render" && ((under(to, module) && to != module+"/master") || under(to, "github.com/bwmarrin/discordgo"))
		}},
		{"discordgo is imported only in bot", func(from, to string) bool {
			return under(to, "github.com/bwmarrin/discordgo") && !under(from, module+"/bot")
		}},
		{"pgx is imported only in store", func(from, to string) bool {
			return under(to, "github.com/jackc/pgx") && !under(from, module+"/store")
		}},
		{"go-openai is imported only in llm", func(from, to string) bool {
			return under(to, "github.com/sashabaranov/go-openai") && !under(from, module+"/llm")
		}},
		{"the MCP SDK is imported only in tools", func(from, to string) bool {
			return under(to, "github.com/modelcontextprotocol/go-sdk") && !under(from, module+"/tools")
		}},
		{"the Prometheus client is imported only in metrics", func(from, to string) bool {
			return under(to, "github.com/prometheus/") && !under(from, module+"/metrics")
		}},
		{"dashboard imports of callon only master (and the rate bound per address): it reads through its own port", func(from, to string) bool {
			return under(from, module+"/dashboard") && under(to, module) && to != module+"/master" && to != module+"/internal/ratelimit"
		}},
		{"store imports of callon only the ports it implements (master, dashboard) and internal/proc", func(from, to string) bool {
			return from == module+"/store" && under(to, module) && to != module+"/master" && to != module+"/dashboard" &&
				to != module+"/internal/proc"
		}},
		{"golang.org/x/oauth2 is imported only in dashboard", func(from, to string) bool {
			return under(to, "golang.org/x/oauth2") && !under(from, module+"/dashboard")
		}},
		{"chromedp drives the browser tests only", func(from, to string) bool {
			return under(to, "github.com/chromedp/") && under(from, module)
		}},
		{"the terminal UI libraries are imported only in terminal", func(from, to string) bool {
			return under(to, "github.com/charmbracelet/") && !under(from, module+"/terminal")
		}},
		{"workers never import bot: workers cannot post", func(from, to string) bool {
			return under(from, module+"/workers") && under(to, module+"/bot")
		}},
		{"eval imports neither store nor bot: eval and replay write no team's rows and post nowhere", func(from, to string) bool {
			return under(from, module+"/eval") && (under(to, module+"/store") || under(to, module+"/bot"))
		}},
		{"only cmd/callon wires the adapters together", func(from, to string) bool {
			adapters := []string{"/bot", "/store", "/llm", "/workers", "/webhook", "/tools", "/metrics", "/dashboard", "/terminal"}
			if !under(from, module) || under(from, module+"/cmd") {
				return false
			}
			if from == module+"/store" && to == module+"/dashboard" {
				return false // the store implements the dashboard's port, as it does master's
			}
			if under(from, module+"/terminal") && to == module+"/bot/render" {
				return false // the terminal shows the text bot/render writes, its markup in terminal words
			}
			for _, a := range adapters {
				for _, b := range adapters {
					if a != b && under(from, module+a) && under(to, module+b) && !under(to, module+"/store/storetest") {
						return true
					}
				}
			}
			return false
		}},
	}
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			for _, r := range rules {
				if r.applies(p.ImportPath, imp) {
					t.Errorf("%s imports %s: the rule is that %s", p.ImportPath, imp, r.name)
				}
			}
		}
	}
}

// deps lists what a package links, itself included.
func deps(t *testing.T, path string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", path)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", path, err, stderr.String())
	}
	return strings.Fields(out.String())
}

// A production binary links production code only: the fakes callon
// bench and callon chat --demo run (bot/discordfake, llm/llmfake) are
// production code, and their testing.TB adapters (bot/discordtest,
// llm/llmtest) and every other test helper stay out: go list -deps
// ./cmd/callon has neither testing nor any package of callon named
// *test.
func TestTheBinaryLinksNoTestCode(t *testing.T) {
	t.Parallel()
	for _, fake := range []string{"/bot/discordfake", "/llm/llmfake", "/internal/e2e"} {
		for _, d := range deps(t, module+fake) {
			if d == "testing" || strings.HasPrefix(d, "testing/") || (under(d, module) && strings.HasSuffix(d, "test")) {
				t.Errorf("%s links %s: it is production code (callon bench, callon chat --demo)", fake[1:], d)
			}
		}
	}
	for _, d := range deps(t, module+"/cmd/callon") {
		if d == "testing" || strings.HasPrefix(d, "testing/") || (under(d, module) && strings.HasSuffix(d, "test")) {
			t.Errorf("cmd/callon links %s: the production binary links no test code", d)
		}
	}
}
