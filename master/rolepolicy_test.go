package master_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

func TestCheckRole(t *testing.T) {
	t.Parallel()
	policy := master.RolePolicy{DefaultModel: "gpt-4o-mini", Models: []string{"gpt-4o"}, MaxPrompt: 50}
	with := func(f func(*master.Role)) master.Role {
		r := master.Role{Name: "copywriter", Description: "Writes copy", Prompt: "Write punchy copy."}
		f(&r)
		return r
	}
	hot, cold := float32(2.5), float32(0.2)
	tests := []struct {
		name string
		role master.Role
		want string // substring of the error; "" for valid
	}{
		{"valid", with(func(*master.Role) {}), ""},
		{"default model by name", with(func(r *master.Role) { r.Model = "gpt-4o-mini" }), ""},
		{"allowed model and limits", with(func(r *master.Role) {
			r.Model, r.Temperature, r.MaxTokens, r.Timeout = "gpt-4o", &cold, 1000, time.Minute
		}), ""},
		{"bad name", with(func(r *master.Role) { r.Name = "copy writer" }), "lowercase slug"},
		{"name starting with a digit", with(func(r *master.Role) { r.Name = "1st" }), "lowercase slug"},
		{"empty description", with(func(r *master.Role) { r.Description = "  " }), "description is empty"},
		{"long description", with(func(r *master.Role) { r.Description = strings.Repeat("d", master.MaxDescriptionLen+1) }), "description is 201 characters"},
		{"multi-line description", with(func(r *master.Role) { r.Description = "a\nb" }), "one line"},
		{"empty prompt", with(func(r *master.Role) { r.Prompt = "" }), "prompt is empty"},
		{"long prompt", with(func(r *master.Role) { r.Prompt = strings.Repeat("é", 51) }), "prompt is 51 characters long; the limit is 50"},
		{"disallowed model", with(func(r *master.Role) { r.Model = "o1-pro" }), `"o1-pro" is not allowed; use one of: gpt-4o-mini, gpt-4o`},
		{"temperature", with(func(r *master.Role) { r.Temperature = &hot }), "temperature 2.5"},
		{"max tokens", with(func(r *master.Role) { r.MaxTokens = master.MaxRoleTokens + 1 }), "max tokens"},
		{"timeout", with(func(r *master.Role) { r.Timeout = time.Second }), "timeout 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := policy.CheckRole(tc.role)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: got %v, want nil", tc.name, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
			case err != nil:
				if master.ErrorCode(err) != master.EInvalid {
					t.Errorf("%s: got %v, want an *master.Error with code %q", tc.name, err, master.EInvalid)
				}
			}
		})
	}
}

func TestDefaultMaxPrompt(t *testing.T) {
	t.Parallel()
	r := master.Role{Name: "a", Description: "d", Prompt: strings.Repeat("p", master.DefaultMaxPrompt)}
	if err := (master.RolePolicy{}).CheckRole(r); err != nil {
		t.Errorf("got %v for a prompt of %d characters, want nil", err, master.DefaultMaxPrompt)
	}
	r.Prompt += "p"
	if err := (master.RolePolicy{}).CheckRole(r); err == nil {
		t.Errorf("got nil for a prompt of %d characters, want an error", master.DefaultMaxPrompt+1)
	}
}

// recordingRoleStore records the writes SetRole passes on.
type recordingRoleStore struct {
	fakeRoleStore
	set  []master.Role
	max  int
	full bool
}

func (s *recordingRoleStore) SetRole(_ context.Context, _ master.RoleScope, r master.Role, _ string, max int) (bool, error) {
	if s.full {
		return false, master.ErrRosterFull
	}
	s.set, s.max = append(s.set, r), max
	return true, nil
}

func (s *recordingRoleStore) RemoveRole(context.Context, master.RoleScope, string, string) error {
	return master.ErrNotFound
}

func TestSetRoleNormalizesValidatesAndCaps(t *testing.T) {
	t.Parallel()
	st := &recordingRoleStore{}
	r, err := master.NewRoles(st, nil, master.RolePolicy{DefaultModel: "mini", MaxRoles: 3})
	if err != nil {
		t.Fatal(err)
	}
	scope := master.RoleScope{GuildID: "1", ChannelID: "2"}
	if _, err := r.SetRole(t.Context(), scope, master.Role{Name: " Copywriter ", Description: " Writes ", Prompt: " Go. "}, "u1"); err != nil {
		t.Fatalf("SetRole: %v", err)
	}
	if len(st.set) != 1 || st.set[0].Name != "copywriter" || st.set[0].Description != "Writes" || st.set[0].Prompt != "Go." || st.max != 3 {
		t.Errorf("got stored %+v with cap %d, want the trimmed, lowercased role and cap 3", st.set, st.max)
	}
	if _, err := r.SetRole(t.Context(), scope, master.Role{Name: "x", Description: "d", Prompt: "p", Model: "big"}, "u1"); err == nil || len(st.set) != 1 {
		t.Errorf("disallowed model: got %v and %d stored, want an error and nothing stored", err, len(st.set))
	}
	st.full = true
	_, err = r.SetRole(t.Context(), scope, master.Role{Name: "y", Description: "d", Prompt: "p"}, "u1")
	if master.ErrorCode(err) != master.EInvalid || !strings.Contains(err.Error(), "already has 3 roles") {
		t.Errorf("full roster: got %v, want an invalid-input error saying it already has 3 roles", err)
	}
	err = r.RemoveRole(t.Context(), scope, "ghost", "u1")
	if master.ErrorCode(err) != master.EInvalid || !strings.Contains(err.Error(), `no role "ghost"`) {
		t.Errorf("remove unknown: got %v, want an invalid-input error naming the role", err)
	}
}

func TestParseAndPickRoles(t *testing.T) {
	t.Parallel()
	if got, want := master.ParseRoleNames(" Researcher, writer;writer  planner,,"), []string{"researcher", "writer", "planner"}; !slices.Equal(got, want) {
		t.Errorf("ParseRoleNames: got %q, want %q", got, want)
	}
	roster := master.DefaultRoles()
	picked, err := master.PickRoles(roster, []string{"writer", "researcher"})
	if err != nil || !slices.Equal(master.RoleNames(picked), []string{"researcher", "writer"}) {
		t.Errorf("PickRoles: got %v, %v; want researcher and writer in roster order", master.RoleNames(picked), err)
	}
	_, err = master.PickRoles(roster, []string{"writer", "chef", "poet"})
	if master.ErrorCode(err) != master.EInvalid || !strings.Contains(err.Error(), "no roles `chef`, `poet`") || !strings.Contains(err.Error(), "available: `researcher`, `planner`") {
		t.Errorf("unknown names: got %v, want an invalid-input error naming them and listing the available ones", err)
	}
}

func TestMayManageRoles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		perms int64
		want  bool
	}{
		{0, false},
		{1<<10 | 1<<11, false}, // view channel, send messages
		{master.PermManageChannels, true},
		{master.PermAdministrator, true},
	} {
		if got := master.MayManageRoles(tc.perms); got != tc.want {
			t.Errorf("MayManageRoles(%d): got %v, want %v", tc.perms, got, tc.want)
		}
	}
}

// catalogFake is a ToolCatalog that knows the tools of server "fs".
type catalogFake struct{}

func (catalogFake) Check(_ string, tools []string) error {
	for _, t := range tools {
		if t != "fetch_url" && !strings.HasPrefix(t, "fs.") {
			return fmt.Errorf("tools: %q: no MCP server is configured for it", t)
		}
	}
	return nil
}
func (catalogFake) Names(context.Context, string) []string { return []string{"fetch_url", "fs.*"} }

func TestRoleToolsPolicy(t *testing.T) {
	t.Parallel()
	role := master.Role{Name: "scout", Description: "Scouts", Prompt: "You scout."}
	with := func(tools ...string) master.Role { r := role; r.Tools = tools; return r }
	many := make([]string, master.MaxRoleTools+1)
	for i := range many {
		many[i] = fmt.Sprintf("fs.t%d", i)
	}
	for _, tc := range []struct {
		name    string
		policy  master.RolePolicy
		role    master.Role
		wantErr string
	}{
		{"no catalog, fetch_url", master.RolePolicy{}, with("fetch_url"), ""},
		{"no catalog, a server's tool", master.RolePolicy{}, with("fs.read"), "no MCP server is configured"},
		{"catalog", master.RolePolicy{Tools: catalogFake{}}, with("fetch_url", "fs.*"), ""},
		{"catalog refuses", master.RolePolicy{Tools: catalogFake{}}, with("git.push"), `"git.push"`},
		{"too many", master.RolePolicy{Tools: catalogFake{}}, with(many...), "at most 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.CheckRole(tc.role)
			if (tc.wantErr == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.wantErr) || master.ErrorCode(err) != master.EInvalid)) {
				t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
			}
		})
	}
	if got := master.ParseToolList(" fetch_url, fs.read_file fs.Write,,fetch_url "); strings.Join(got, "|") != "fetch_url|fs.read_file|fs.Write" {
		t.Errorf("ParseToolList: got %q", got)
	}
}
