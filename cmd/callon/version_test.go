package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// callon version names the latest release of CHANGELOG.md (a semantic
// version with its date), with "+dev" when built without a version of its
// own, as tests are.
func TestVersionIsTheChangelogs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading such as ## [0.1.0] - 2026-11-26")
	}
	if m[1] != released {
		t.Errorf("CHANGELOG.md's latest release is %s, but callon reports %s", m[1], released)
	}
	out, _, err := runCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "callon "+released+"+dev ") {
		t.Errorf("callon version = %q, %v; want callon %s+dev …", out, err, released)
	}
}

// A version stamped at build time is reported as it is; "dev", which
// builds stamped before the first release, counts as none.
func TestBuildVersion(t *testing.T) {
	t.Parallel()
	for stamped, want := range map[string]string{"0.2.0": "0.2.0", "": released + "+dev", "dev": released + "+dev"} {
		if got := buildOf(stamped).Version; got != want {
			t.Errorf("stamped %q: version %q, want %q", stamped, got, want)
		}
	}
}
