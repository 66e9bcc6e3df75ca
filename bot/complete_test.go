package bot

import (
	"slices"
	"testing"
)

func TestCompleteList(t *testing.T) {
	t.Parallel()
	names := []string{"researcher", "planner", "writer", "reviewer", "copywriter"}
	tests := []struct {
		typed string
		want  []string
	}{
		{"", names},
		{"re", []string{"researcher", "reviewer"}},
		{"writ", []string{"writer", "copywriter"}}, // prefix first, then contains
		{"Researcher, RE", []string{"researcher, reviewer"}},
		{"researcher,", []string{"researcher, planner", "researcher, writer", "researcher, reviewer", "researcher, copywriter"}},
		{"researcher, planner, writer, reviewer, copywriter,", []string{"researcher, planner, writer, reviewer, copywriter"}},
		{"zzz", nil},
	}
	for _, tc := range tests {
		if got := completeList(tc.typed, names); !slices.Equal(got, tc.want) {
			t.Errorf("completeList(%q): got %q, want %q", tc.typed, got, tc.want)
		}
	}
}
