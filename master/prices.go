package master

import (
	"fmt"
	"slices"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	In  float64 // prompt tokens
	Out float64 // completion tokens
}

// Prices are the operator's prices by model name (CALLON_PRICES).
type Prices map[string]Price

// Cost is what some usage cost, as far as the models' prices are known.
type Cost struct {
	USD      float64  // the cost of the models with a price
	Priced   bool     // at least one model with usage has a price
	Unpriced []string // models with usage but no price, sorted
}

// Cost prices usage by model (each Usage carrying its Model).
func (p Prices) Cost(usage []Usage) Cost {
	var c Cost
	for _, u := range usage {
		if u.Total() == 0 {
			continue
		}
		price, ok := p[u.Model]
		if !ok {
			name := u.Model
			if name == "" {
				name = "unknown model"
			}
			if !slices.Contains(c.Unpriced, name) {
				c.Unpriced = append(c.Unpriced, name)
			}
			continue
		}
		c.Priced = true
		c.USD += (float64(u.PromptTokens)*price.In + float64(u.CompletionTokens)*price.Out) / 1e6
	}
	slices.Sort(c.Unpriced)
	return c
}

// String renders the cost for people: "" when no model with usage has a
// price.
func (c Cost) String() string {
	if !c.Priced {
		return ""
	}
	s := "≈ " + USD(c.USD)
	if len(c.Unpriced) > 0 {
		s += " (not counting " + strings.Join(c.Unpriced, ", ") + ": no price)"
	}
	return s
}

// USD writes an amount of dollars: cents from a dollar up, else four
// decimals.
func USD(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// SumUsage adds up usage of several models.
func SumUsage(usage []Usage) Usage {
	var t Usage
	for _, u := range usage {
		t.PromptTokens += u.PromptTokens
		t.CompletionTokens += u.CompletionTokens
	}
	return t
}
