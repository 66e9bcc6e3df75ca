package main

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/callonbot/callon/metrics"
)

// released is the latest version cut in CHANGELOG.md. A binary built
// from a checkout without a version of its own reports it as
// "<released>+dev": that release, plus whatever the checkout has since.
const released = "0.1.0"

// revision is set at build time with -ldflags "-X main.revision=…" (the
// Dockerfile's REVISION build argument); otherwise it comes from the VCS
// information Go stamps into binaries built in a checkout.
var revision = ""

// build describes the running binary: version (main.version, else the
// module's version when installed with go install, else released+"+dev"),
// VCS revision (with "-dirty" for uncommitted changes) and Go version.
func build() metrics.Build { return buildOf(version) }

// buildOf is build with the version stamped at build time.
func buildOf(stamped string) metrics.Build {
	b := metrics.Build{Version: stamped, Revision: revision, GoVersion: runtime.Version()}
	if b.Version == "dev" { // what builds stamped before the first release
		b.Version = ""
	}
	info, ok := debug.ReadBuildInfo()
	if b.Version == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = strings.TrimPrefix(info.Main.Version, "v")
	}
	if b.Version == "" {
		b.Version = released + "+dev"
	}
	if !ok {
		return b
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev != "" {
		rev += dirty
	}
	b.Revision = cmp.Or(b.Revision, rev)
	return b
}

// versionLine is what callon version prints after "callon ".
func versionLine(b metrics.Build) string {
	line := b.Version
	if b.Revision != "" {
		line += " (" + b.Revision + ")"
	}
	return line + " " + b.GoVersion
}
