// Package docstest keeps, in its tests, the documentation true: every
// relative link of README.md and the pages under docs/ (and the other
// Markdown files at the root) leads to a file that exists, and to a
// heading of it when it names one; every variable the configuration reads
// is in the configuration reference and in .env.example, and every
// variable they document is read by callon or by a compose file.
package docstest
