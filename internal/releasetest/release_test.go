package releasetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// goreleaserModule is the GoReleaser the configuration is written for
// (docs/development.md, "Releases", runs the same).
const goreleaserModule = "github.com/goreleaser/goreleaser/v2@v2.15.1"

// goreleaser returns the goreleaser binary: $GORELEASER when set, else
// one built from the Go module proxy into the user's cache directory the
// first time (a few minutes), and found there afterwards.
func goreleaser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GORELEASER"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory to build goreleaser into: %v", err)
	}
	_, version, _ := strings.Cut(goreleaserModule, "@")
	dir := filepath.Join(cache, "callon-tools", "goreleaser-"+version)
	bin := filepath.Join(dir, "goreleaser")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Installed into a directory of its own, then moved: another test
	// process building at the same time never sees half a binary.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(t.Context(), "go", "install", goreleaserModule)
	cmd.Dir = tmp // outside callon's module
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "CGO_ENABLED=0")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build %s, which checks .goreleaser.yaml (it comes from the Go module proxy): %v\n%s", goreleaserModule, err, out)
	}
	t.Logf("built %s in %s into %s", goreleaserModule, time.Since(start).Round(time.Second), dir)
	if err := os.Rename(filepath.Join(tmp, "goreleaser"), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// run runs goreleaser in the repository's root and returns its output,
// failing the test when it fails.
func run(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("goreleaser %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestGoReleaserCheck(t *testing.T) {
	t.Parallel()
	out := run(t, goreleaser(t), nil, "check", "--config", ".goreleaser.yaml")
	if !strings.Contains(out, "1 configuration file(s) validated") {
		t.Errorf("goreleaser check did not validate the configuration:\n%s", out)
	}
	if strings.Contains(out, "DEPRECATED") {
		t.Errorf("the configuration uses deprecated settings:\n%s", out)
	}
}

// A snapshot build of this machine's target makes a callon that reports
// the snapshot's version and revision: the ldflags reach main.version.
func TestGoReleaserSnapshotBuild(t *testing.T) {
	t.Parallel()
	bin := goreleaser(t)
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The same configuration, building into a directory of the test's own.
	dist := t.TempDir()
	config := filepath.Join(t.TempDir(), "goreleaser.yaml")
	if err := os.WriteFile(config, append(data, []byte("\ndist: "+dist+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, bin, []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH},
		"build", "--snapshot", "--single-target", "--clean", "--config", config)
	name := "callon"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	built, err := filepath.Glob(filepath.Join(dist, "callon_"+runtime.GOOS+"_"+runtime.GOARCH+"*", name))
	if err != nil || len(built) != 1 {
		t.Fatalf("found %v (%v) in %s; want the one binary of %s/%s", built, err, dist, runtime.GOOS, runtime.GOARCH)
	}
	out, err := exec.CommandContext(t.Context(), built[0], "version").CombinedOutput()
	if err != nil {
		t.Fatalf("callon version: %v\n%s", err, out)
	}
	// The revision is the commit's, or "none" where GoReleaser cannot
	// read the repository's state (a clone without a remote).
	if !regexp.MustCompile(`^callon \d+\.\d+\.\d+-snapshot\+\w+ \(\w+\) go1\.`).Match(out) {
		t.Errorf("the snapshot's callon version = %q, want its snapshot version and revision", out)
	}
}

// The release's targets: Linux, macOS and Windows on amd64 and arm64, with
// checksums, and an image for linux/amd64 and linux/arm64 tagged with the
// version, never latest.
func TestGoReleaserTargets(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	for _, want := range []string{
		"goos: [linux, darwin, windows]", "goarch: [amd64, arm64]", "checksum:", "dockers_v2:",
		"- linux/amd64", "- linux/arm64", "ghcr.io/callonbot/callon", `"{{ .Version }}"`,
		"-X main.version={{ .Version }}", "dockerfile: Dockerfile.release",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf(".goreleaser.yaml lacks %q", want)
		}
	}
	for _, line := range strings.Split(cfg, "\n") {
		if code, _, _ := strings.Cut(line, "#"); strings.Contains(code, "latest") {
			t.Errorf(".goreleaser.yaml tags an image latest: %s", line)
		}
	}
	df, err := os.ReadFile(filepath.Join(root, "Dockerfile.release"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ARG TARGETPLATFORM", "COPY $TARGETPLATFORM/callon /callon", "USER nonroot", `ENTRYPOINT ["/callon"]`} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile.release lacks %q", want)
		}
	}
}
