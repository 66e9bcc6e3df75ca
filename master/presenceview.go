package master

// TeamPresence is what /team shows of a team's features at work: its
// channel's notes, and the verdicts on its replies.
type TeamPresence struct {
	Notes                    int // notes its channel keeps
	Passed, Revised, Skipped int // its replies reviewed: passed (or with a caveat), sent back, unreviewed
}
