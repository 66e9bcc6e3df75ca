package main

import (
	"cmp"
	"runtime"
	"runtime/debug"

	"github.com/callonbot/callon/metrics"
)

// revision is set at build time with -ldflags "-X main.revision=…" (the
// Dockerfile's REVISION build argument); otherwise it comes from the VCS
// information Go stamps into binaries built in a checkout.
var revision = ""

// build describes the running binary: version (main.version, else the
// module's version when installed with go install), VCS revision (with
// "-dirty" for uncommitted changes) and Go version.
func build() metrics.Build {
	b := metrics.Build{Version: version, Revision: revision, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
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
