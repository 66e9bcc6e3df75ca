package demo

import (
	"strings"
	"testing"
)

// The demo's coordinator hears the market in words, not in letters: an
// answer for Europe that says "because" is not one for the US.
func TestTheDemoHearsTheMarketAsAWord(t *testing.T) {
	t.Parallel()
	for answer, us := range map[string]bool{
		"europe, because it's closer": false,
		"Europe":                      false,
		"the US":                      true,
		"US, please.":                 true,
		"north america":               true,
		"the United States":           true,
		"just use Europe":             false,
	} {
		if got := mentionsUS(strings.ToLower(answer)); got != us {
			t.Errorf("%q names the US: %v, want %v", answer, got, us)
		}
	}
}
