// Package discordtest ties the fake Discord of bot/discordfake to a test:
// New starts one that stops when the test ends, and an action the fake
// refuses (a command that does not fit its definition, a button no user
// could click, a modal the client would not send) or a wait that times
// out fails the test. The fake's vocabulary is re-exported, so a test
// needs only this package. Tests only: production code (callon bench)
// uses bot/discordfake.
package discordtest
