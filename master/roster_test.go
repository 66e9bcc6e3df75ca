package master_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// fakeRoleStore is a RoleStore whose reads come from a list.
type fakeRoleStore struct {
	master.RoleStore // unused methods panic
	configured       []master.RoleEntry
	err              error
}

func (f *fakeRoleStore) ConfiguredRoles(_ context.Context, guildID, channelID string) ([]master.RoleEntry, error) {
	var out []master.RoleEntry
	for _, e := range f.configured {
		if e.Scope.GuildID == guildID && (e.Scope.ChannelID == channelID || e.Scope.ChannelID == "") {
			out = append(out, e)
		}
	}
	return out, f.err
}

func role(name string) master.Role {
	return master.Role{Name: name, Description: name + " does things", Prompt: "You are good at " + name + "."}
}

func set(guild, channel, name string) master.RoleEntry {
	return master.RoleEntry{Role: role(name), Scope: master.RoleScope{GuildID: guild, ChannelID: channel}, UpdatedBy: "u1", UpdatedAt: time.Unix(1700000000, 0)}
}

func TestResolveOrder(t *testing.T) {
	t.Parallel()
	const g, c = "100", "200"
	fileAll := map[master.RoleScope][]master.Role{
		{GuildID: g, ChannelID: c}: {role("file-channel")},
		{GuildID: g}:               {role("file-guild")},
		{}:                         {role("file-default")},
	}
	tests := []struct {
		name       string
		configured []master.RoleEntry
		file       map[master.RoleScope][]master.Role
		wantRoles  []string
		wantLayers []master.RoleSource
	}{
		{
			name:       "nothing configured: built-ins",
			wantRoles:  master.RoleNames(master.DefaultRoles()),
			wantLayers: []master.RoleSource{master.SourceBuiltin},
		},
		{
			name:       "file default beats built-ins",
			file:       map[master.RoleScope][]master.Role{{}: {role("file-default")}},
			wantRoles:  []string{"file-default"},
			wantLayers: []master.RoleSource{master.SourceFile, master.SourceBuiltin},
		},
		{
			name:       "file guild beats file default",
			file:       map[master.RoleScope][]master.Role{{GuildID: g}: {role("file-guild")}, {}: {role("file-default")}},
			wantRoles:  []string{"file-guild"},
			wantLayers: []master.RoleSource{master.SourceFile, master.SourceFile, master.SourceBuiltin},
		},
		{
			name:       "file channel beats file guild",
			file:       fileAll,
			wantRoles:  []string{"file-channel"},
			wantLayers: []master.RoleSource{master.SourceFile, master.SourceFile, master.SourceFile, master.SourceBuiltin},
		},
		{
			name:       "guild set by command beats the whole file",
			configured: []master.RoleEntry{set(g, "", "cmd-guild")},
			file:       fileAll,
			wantRoles:  []string{"cmd-guild"},
			wantLayers: []master.RoleSource{master.SourceGuild, master.SourceFile, master.SourceFile, master.SourceFile, master.SourceBuiltin},
		},
		{
			name:       "channel set by command beats everything, and is not merged",
			configured: []master.RoleEntry{set(g, "", "cmd-guild"), set(g, c, "cmd-channel-a"), set(g, c, "cmd-channel-b")},
			file:       fileAll,
			wantRoles:  []string{"cmd-channel-a", "cmd-channel-b"},
			wantLayers: []master.RoleSource{master.SourceChannel, master.SourceGuild, master.SourceFile, master.SourceFile, master.SourceFile, master.SourceBuiltin},
		},
		{
			name:       "another channel's and another guild's rosters do not apply",
			configured: []master.RoleEntry{set(g, "999", "elsewhere"), set("300", "", "other-guild")},
			file:       map[master.RoleScope][]master.Role{{GuildID: g, ChannelID: "999"}: {role("file-elsewhere")}, {GuildID: "300"}: {role("file-other")}},
			wantRoles:  master.RoleNames(master.DefaultRoles()),
			wantLayers: []master.RoleSource{master.SourceBuiltin},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := master.NewRoles(&fakeRoleStore{configured: tc.configured}, tc.file, master.RolePolicy{})
			if err != nil {
				t.Fatalf("NewRoles: %v", err)
			}
			layers, err := r.Resolve(t.Context(), g, c)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			var sources []master.RoleSource
			for _, l := range layers {
				sources = append(sources, l.Source)
			}
			if !slices.Equal(sources, tc.wantLayers) {
				t.Errorf("got layers %v, want %v", sources, tc.wantLayers)
			}
			roster, err := r.Roster(t.Context(), g, c)
			if err != nil {
				t.Fatalf("Roster: %v", err)
			}
			if got := master.RoleNames(roster); !slices.Equal(got, tc.wantRoles) {
				t.Errorf("got roster %v, want %v", got, tc.wantRoles)
			}
		})
	}
}

func TestResolveLabelsAndEntries(t *testing.T) {
	t.Parallel()
	file := map[master.RoleScope][]master.Role{{GuildID: "1", ChannelID: "2"}: {role("a")}, {GuildID: "1"}: {role("b")}, {}: {role("c")}}
	r, err := master.NewRoles(&fakeRoleStore{configured: []master.RoleEntry{set("1", "2", "x"), set("1", "", "y")}}, file, master.RolePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := r.Resolve(t.Context(), "1", "2")
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, l := range layers {
		labels = append(labels, l.Label())
	}
	want := []string{"this channel", "this server", "roles file (this channel)", "roles file (this server)", "roles file (default)", "built-in roles"}
	if !slices.Equal(labels, want) {
		t.Errorf("got labels %q, want %q", labels, want)
	}
	if e := layers[0].Roles[0]; e.Source != master.SourceChannel || e.UpdatedBy != "u1" || e.UpdatedAt.IsZero() {
		t.Errorf("got first entry %+v, want a channel role with who changed it and when", e)
	}
}

func TestResolveStoreError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r, err := master.NewRoles(&fakeRoleStore{err: boom}, nil, master.RolePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Roster(t.Context(), "1", "2"); !errors.Is(err, boom) {
		t.Errorf("got %v, want the store's error", err)
	}
}

func TestRosterFallsBackFromDisallowedModel(t *testing.T) {
	t.Parallel()
	old := set("1", "2", "analyst")
	old.Model = "retired-model"
	fresh := set("1", "2", "writer")
	fresh.Model = "gpt-4o"
	r, err := master.NewRoles(&fakeRoleStore{configured: []master.RoleEntry{old, fresh}}, nil,
		master.RolePolicy{DefaultModel: "gpt-4o-mini", Models: []string{"gpt-4o"}})
	if err != nil {
		t.Fatal(err)
	}
	roster, err := r.Roster(t.Context(), "1", "2")
	if err != nil {
		t.Fatal(err)
	}
	if roster[0].Model != "" || roster[1].Model != "gpt-4o" {
		t.Errorf("got models %q and %q, want \"\" (the default) for a model no longer allowed and gpt-4o kept", roster[0].Model, roster[1].Model)
	}
}

func TestNewRolesChecksTheFile(t *testing.T) {
	t.Parallel()
	policy := master.RolePolicy{DefaultModel: "mini", Models: []string{"big"}, MaxPrompt: 100, MaxRoles: 2}
	bad := role("copywriter")
	bad.Model = "huge"
	tests := []struct {
		name string
		file map[master.RoleScope][]master.Role
		want []string
	}{
		{"model", map[master.RoleScope][]master.Role{{GuildID: "1", ChannelID: "2"}: {bad}},
			[]string{"guild 1, channel 2", `role "copywriter"`, `model "huge" is not allowed`, "mini, big"}},
		{"too many", map[master.RoleScope][]master.Role{{GuildID: "1"}: {role("a"), role("b"), role("c")}},
			[]string{"guild 1:", "3 roles", "at most 2"}},
		{"duplicate", map[master.RoleScope][]master.Role{{}: {role("a"), role("a")}},
			[]string{"default roster", `role "a" appears twice`}},
		{"name", map[master.RoleScope][]master.Role{{}: {role("Bad Name")}},
			[]string{`role "Bad Name"`, "lowercase slug"}},
	}
	for _, tc := range tests {
		_, err := master.NewRoles(&fakeRoleStore{}, tc.file, policy)
		if err == nil {
			t.Errorf("%s: got nil error, want one", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}
