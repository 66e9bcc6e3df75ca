package docstest

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// link is a Markdown link or image: [text](target) or ![alt](target),
// with an optional "title".
var link = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

// TestRelativeLinks checks every relative link of the Markdown files: the
// file it names exists (inside the repository), and the heading its
// fragment names is in that file (or in the same file for "#…").
func TestRelativeLinks(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	ids := map[string]map[string]bool{} // by path relative to root
	idsOf := func(rel string) map[string]bool {
		if ids[rel] == nil {
			ids[rel] = anchors(read(t, rel))
		}
		return ids[rel]
	}
	checked := 0
	for _, f := range files {
		for _, l := range prose(read(t, f)) {
			for _, m := range link.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if u, err := url.Parse(target); err == nil && u.Scheme != "" {
					continue // http(s), mailto: not ours to check offline
				}
				checked++
				where := f + ":" + strconv.Itoa(l.n)
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
					if strings.HasPrefix(dest, "..") {
						t.Errorf("%s: %s leaves the repository", where, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: %s: no such file (%s)", where, target, dest)
						continue
					}
				}
				if frag != "" {
					if !strings.HasSuffix(dest, ".md") {
						t.Errorf("%s: %s: a fragment of a file that is not Markdown", where, target)
					} else if !idsOf(dest)[frag] {
						t.Errorf("%s: %s: %s has no heading #%s", where, target, dest, frag)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d relative links; is the link pattern still right?", checked)
	}
}

// TestEveryPageIsLinked keeps every page under docs/ reachable from
// docs/index.md.
func TestEveryPageIsLinked(t *testing.T) {
	t.Parallel()
	index := read(t, filepath.Join("docs", "index.md"))
	for _, f := range markdownFiles(t) {
		dir, name := filepath.Split(f)
		if filepath.Clean(dir) != "docs" || name == "index.md" {
			continue
		}
		if !strings.Contains(index, "]("+name+")") && !strings.Contains(index, "]("+name+"#") {
			t.Errorf("docs/index.md does not link %s", f)
		}
	}
}

// secTest is a test named in SECURITY.md's table.
var secTest = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")

// TestSecurityNamesRealTests keeps SECURITY.md's "guarded by" column
// true: every test it names exists in the repository.
func TestSecurityNamesRealTests(t *testing.T) {
	t.Parallel()
	names := secTest.FindAllStringSubmatch(read(t, "SECURITY.md"), -1)
	if len(names) < 20 {
		t.Fatalf("SECURITY.md names %d tests, want its table's", len(names))
	}
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !defined[n[1]] {
			t.Errorf("SECURITY.md names %s, which no test file defines", n[1])
		}
	}
}
