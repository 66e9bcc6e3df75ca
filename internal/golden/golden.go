// Package golden compares test output with golden files under testdata,
// in the manner of go/printer's tests: run the tests with -update to
// rewrite the files, then read the diff.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Check compares got with testdata/name, or rewrites the file with
// -update.
func Check(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

// Updating reports whether the tests run with -update: tests that
// regenerate files of other kinds (the docs' screenshots) follow it too.
func Updating() bool { return *update }
