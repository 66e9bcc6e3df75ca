package eval

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
)

//go:embed situations
var builtin embed.FS

// Builtin returns the situations that ship with callon, in name order.
func Builtin() ([]Situation, error) {
	return load(builtin, "situations")
}

// LoadDir reads the situations of a directory (its *.yaml and *.yml
// files, subdirectories included).
func LoadDir(dir string) ([]Situation, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("cases directory: %w", err)
	}
	return load(os.DirFS(dir), ".")
}

// maxSituationFile bounds one situation file.
const maxSituationFile = 1 << 20

func load(fsys fs.FS, root string) ([]Situation, error) {
	var out []Situation
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if len(data) > maxSituationFile {
			return fmt.Errorf("%s: larger than %d bytes", p, maxSituationFile)
		}
		s, err := Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		s.file = p
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%s and %s: two situations named %q", out[i-1].file, out[i].file, out[i].Name)
		}
	}
	return out, nil
}

// Select picks the situations whose names match one of the patterns
// (path.Match globs, comma-separated); an empty list selects them all.
// A pattern that matches nothing is an error.
func Select(all []Situation, patterns string) ([]Situation, error) {
	var pats []string
	for _, p := range strings.Split(patterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pats = append(pats, p)
		}
	}
	if len(pats) == 0 {
		return all, nil
	}
	var out []Situation
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--cases: bad pattern %q", p)
		}
		n := 0
		for _, s := range all {
			if ok, _ := path.Match(p, s.Name); ok {
				n++
				if !slices.ContainsFunc(out, func(o Situation) bool { return o.Name == s.Name }) {
					out = append(out, s)
				}
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("--cases: no case matches %q", p)
		}
	}
	return out, nil
}

// Of returns the situations for one kind of model, master or worker.
func Of(all []Situation, who string) []Situation {
	var out []Situation
	for _, s := range all {
		if s.For == who {
			out = append(out, s)
		}
	}
	return out
}
