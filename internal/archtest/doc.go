// Package archtest enforces, in its test, the dependency rules that
// ARCHITECTURE.md states, from what `go list` reports, so they stay true.
package archtest
