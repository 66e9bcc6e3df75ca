package docstest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// markdownFiles is every Markdown file the docs test reads, relative to
// root: those at the root and every one under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if files[i], err = filepath.Rel(root, f); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Contains(files, "README.md") || !slices.Contains(files, filepath.Join("docs", "index.md")) {
		t.Fatalf("found %v; want README.md and docs/index.md among them", files)
	}
	return files
}

func read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// line is a line of a Markdown file outside its fenced code blocks.
type line struct {
	n    int // 1-based
	text string
}

// prose is the lines of a Markdown file that are not in a fenced code
// block, with inline code spans blanked out (a link in one is not a link).
func prose(md string) []line {
	var out []line
	fence := ""
	for i, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		out = append(out, line{i + 1, codeSpan.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat("x", len(s)) })})
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)
	htmlID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// anchors is every fragment a link to the Markdown file md may name: its
// headings as GitHub makes them ids (duplicates numbered -1, -2…), and
// the ids of its <a id="…"> tags.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id := slug(m[2])
		if n := seen[id]; n > 0 {
			out[id+"-"+strconv.Itoa(n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// slug is the id GitHub gives a heading: lower case, spaces as hyphens,
// and every character but letters, digits, hyphens and underscores
// dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Model providers: Ollama, vLLM, OpenRouter": "model-providers-ollama-vllm-openrouter",
		"The team's commands":                       "the-teams-commands",
		"Scaling out: several processes":            "scaling-out-several-processes",
		"`callon doctor`":                           "callon-doctor",
		"Teams in other channels: hand-back":        "teams-in-other-channels-hand-back",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
