// Package releasetest checks, in its tests, the release configuration at
// the repository's root with the GoReleaser it is written for:
// `goreleaser check` accepts .goreleaser.yaml, and a snapshot build of
// one target makes a binary that reports its version. GoReleaser comes
// from the Go module proxy, built once into the user's cache directory;
// a test fails, never skips, when it cannot be built.
package releasetest
