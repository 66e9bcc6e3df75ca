package master

import (
	"strings"
	"testing"
	"time"
)

// A role's line counts its tasks in words people read: "1 task".
func TestReliabilityLineCountsInWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    Reliability
		want string
	}{
		{Reliability{Tasks: 1, Done: 1, Median: time.Second, P90: time.Second}, "1 task, 100% done"},
		{Reliability{Tasks: 2, Done: 1, Failed: 1, Median: time.Second, P90: time.Second}, "2 tasks, 50% done, 1 failed"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if got := ReliabilityLine(c.r); !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want it to start %q", got, c.want)
			}
		})
	}
}
