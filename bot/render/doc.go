// Package render writes the team's domain values as Discord shows them:
// status messages, the /team embed (within Discord's limits), roles
// lists, approval requests with their arguments. The core decides and
// hands over values; the bot speaks, through this package. The terminal
// shows the same text with Discord's markup in terminal words.
package render
