package workers

import (
	"context"

	"github.com/callonbot/callon/master"
)

// maxEnds bounds the outcomes written in one call.
const maxEnds = 128

// end writes one task's outcome and returns the store's answer for it.
// Outcomes of tasks that end together are written together (group
// commit, see proc.Group): the first to arrive writes at once, with every
// outcome queued meanwhile; the ones that arrive while a write is in
// flight are written next, by the first of them.
func (p *Pool) end(ctx context.Context, c master.Completion) error {
	return p.ends.Do(ctx, c)
}
