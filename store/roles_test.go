package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

func roleDef(name string) master.Role {
	return master.Role{Name: name, Description: name + " does things", Prompt: "You are the best " + name + "."}
}

func names(entries []master.RoleEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}

func TestSetRoleStoresWhoAndWhenAndAudits(t *testing.T) {
	t.Parallel()
	w := setup(t)
	channel := master.RoleScope{GuildID: "g1", ChannelID: "c1"}
	guild := master.RoleScope{GuildID: "g1"}
	temp := float32(0.7)
	full := master.Role{Name: "copywriter", Description: "Writes copy", Prompt: "Be punchy.", Model: "gpt-4o",
		Temperature: &temp, MaxTokens: 900, Timeout: 90 * time.Second}
	if created, err := w.store.SetRole(w.ctx, channel, full, "alice", 8); err != nil || !created {
		t.Fatalf("SetRole: got %v, %v; want created", created, err)
	}
	if _, err := w.store.SetRole(w.ctx, guild, roleDef("analyst"), "bob", 8); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.SetRole(w.ctx, channel, roleDef("seo"), "alice", 8); err != nil {
		t.Fatal(err)
	}
	updated := full
	updated.Prompt = "Be punchier."
	updated.Temperature, updated.MaxTokens, updated.Timeout = nil, 0, 0
	if created, err := w.store.SetRole(w.ctx, channel, updated, "carol", 8); err != nil || created {
		t.Fatalf("second SetRole: got %v, %v; want updated, not created", created, err)
	}
	if _, err := w.store.SetRole(w.ctx, master.RoleScope{GuildID: "g1", ChannelID: "c2"}, roleDef("elsewhere"), "bob", 8); err != nil {
		t.Fatal(err)
	}

	got, err := w.store.ConfiguredRoles(w.ctx, "g1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	// Guild-wide first (channel_id ''), then the channel's, each in the
	// order first set; an update keeps its place.
	if want := []string{"analyst", "copywriter", "seo"}; !slices.Equal(names(got), want) {
		t.Fatalf("got %v, want %v", names(got), want)
	}
	cw := got[1]
	if cw.Scope != channel || cw.Prompt != "Be punchier." || cw.Model != "gpt-4o" || cw.UpdatedBy != "carol" ||
		cw.UpdatedAt.IsZero() || cw.Temperature != nil || cw.MaxTokens != 0 || cw.Timeout != 0 {
		t.Errorf("got %+v, want the update by carol with no temperature, max tokens or timeout", cw)
	}
	if got[0].Scope != guild || got[0].UpdatedBy != "bob" {
		t.Errorf("got %+v, want bob's guild-wide analyst", got[0])
	}

	// Limits survive the round trip.
	if _, err := w.store.SetRole(w.ctx, channel, full, "alice", 8); err != nil {
		t.Fatal(err)
	}
	got, _ = w.store.ConfiguredRoles(w.ctx, "g1", "c1")
	if cw := got[1]; cw.Temperature == nil || *cw.Temperature != 0.7 || cw.MaxTokens != 900 || cw.Timeout != 90*time.Second {
		t.Errorf("got temperature %v, max tokens %d, timeout %s; want 0.7, 900, 1m30s", cw.Temperature, cw.MaxTokens, cw.Timeout)
	}

	changes, err := w.store.RoleChanges(w.ctx, "g1", "c1", 10)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range changes {
		lines = append(lines, fmt.Sprintf("%s %s %v %s", c.Scope.ChannelID, c.Action, c.Names, c.By))
	}
	want := []string{"c1 set [copywriter] alice", "c1 set [copywriter] carol", "c1 set [seo] alice", " set [analyst] bob", "c1 set [copywriter] alice"}
	if !slices.Equal(lines, want) {
		t.Errorf("got changes %q, want %q (newest first, without other channels')", lines, want)
	}
}

func TestRemoveAndResetRoles(t *testing.T) {
	t.Parallel()
	w := setup(t)
	channel := master.RoleScope{GuildID: "g1", ChannelID: "c1"}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := w.store.SetRole(w.ctx, channel, roleDef(n), "alice", 8); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.RemoveRole(w.ctx, channel, "b", "bob"); err != nil {
		t.Fatalf("RemoveRole: %v", err)
	}
	if err := w.store.RemoveRole(w.ctx, channel, "b", "bob"); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("removing again: got %v, want ErrNotFound", err)
	}
	removed, err := w.store.ResetRoles(w.ctx, channel, "carol")
	if err != nil || !slices.Equal(removed, []string{"a", "c"}) {
		t.Errorf("ResetRoles: got %v, %v; want [a c]", removed, err)
	}
	if removed, err := w.store.ResetRoles(w.ctx, channel, "carol"); err != nil || len(removed) != 0 {
		t.Errorf("second ResetRoles: got %v, %v; want nothing", removed, err)
	}
	if got, _ := w.store.ConfiguredRoles(w.ctx, "g1", "c1"); len(got) != 0 {
		t.Errorf("got %v after reset, want none", names(got))
	}
	changes, err := w.store.RoleChanges(w.ctx, "g1", "c1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Action != master.RoleReset || !slices.Equal(changes[0].Names, []string{"a", "c"}) || changes[0].By != "carol" ||
		changes[1].Action != master.RoleRemove || changes[1].By != "bob" {
		t.Errorf("got changes %+v, want carol's reset of a and c, then bob's removal (an empty reset is not recorded)", changes)
	}
	var detail string
	if err := w.pool.QueryRow(w.ctx, `SELECT detail->'roles'->'a'->>'prompt' FROM role_changes WHERE action = 'reset'`).Scan(&detail); err != nil || detail != "You are the best a." {
		t.Errorf("reset detail: got %q, %v; want the removed definitions kept", detail, err)
	}
}

func TestSetRoleCapHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	w := setup(t)
	scope := master.RoleScope{GuildID: "g1", ChannelID: "c1"}
	const max, admins = 3, 8
	var wg sync.WaitGroup
	errs := make([]error, admins)
	for i := range admins {
		wg.Go(func() {
			_, errs[i] = w.store.SetRole(w.ctx, scope, roleDef(fmt.Sprint("r", i)), "alice", max)
		})
	}
	wg.Wait()
	ok, full := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, master.ErrRosterFull):
			full++
		default:
			t.Errorf("SetRole: %v", err)
		}
	}
	if ok != max || full != admins-max {
		t.Errorf("got %d saved and %d refused, want %d and %d", ok, full, max, admins-max)
	}
	// Replacing an existing role is not adding one.
	got, _ := w.store.ConfiguredRoles(w.ctx, "g1", "c1")
	if _, err := w.store.SetRole(w.ctx, scope, roleDef(got[0].Name), "bob", max); err != nil {
		t.Errorf("updating a role of a full roster: got %v, want nil", err)
	}
}

// TestResolutionOrderAgainstPostgres walks one channel through every
// source, most specific first, with the file and commands together.
func TestResolutionOrderAgainstPostgres(t *testing.T) {
	t.Parallel()
	w := setup(t)
	file := map[master.RoleScope][]master.Role{
		{}:                               {roleDef("file-default")},
		{GuildID: "g1"}:                  {roleDef("file-guild")},
		{GuildID: "g1", ChannelID: "c1"}: {roleDef("file-channel")},
	}
	roles, err := master.NewRoles(w.store, file, master.RolePolicy{MaxRoles: 8})
	if err != nil {
		t.Fatal(err)
	}
	channel := master.RoleScope{GuildID: "g1", ChannelID: "c1"}
	guild := master.RoleScope{GuildID: "g1"}
	check := func(step string, guildID, channelID string, want ...string) {
		t.Helper()
		roster, err := roles.Roster(w.ctx, guildID, channelID)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := master.RoleNames(roster); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", step, got, want)
		}
	}
	check("file only", "g1", "c1", "file-channel")
	check("file, other channel", "g1", "c9", "file-guild")
	check("file, other guild", "g9", "c1", "file-default")

	if _, err := roles.SetRole(w.ctx, guild, roleDef("cmd-guild"), "alice"); err != nil {
		t.Fatal(err)
	}
	check("guild by command", "g1", "c1", "cmd-guild")
	check("guild by command, other channel", "g1", "c9", "cmd-guild")
	check("guild by command, other guild", "g9", "c1", "file-default")

	for _, n := range []string{"cmd-a", "cmd-b"} {
		if _, err := roles.SetRole(w.ctx, channel, roleDef(n), "alice"); err != nil {
			t.Fatal(err)
		}
	}
	check("channel by command", "g1", "c1", "cmd-a", "cmd-b")
	check("channel by command, other channel", "g1", "c9", "cmd-guild")

	if _, err := roles.ResetRoles(w.ctx, channel, "alice"); err != nil {
		t.Fatal(err)
	}
	check("channel reset", "g1", "c1", "cmd-guild")
	if err := roles.RemoveRole(w.ctx, guild, "cmd-guild", "alice"); err != nil {
		t.Fatal(err)
	}
	check("guild emptied", "g1", "c1", "file-channel")

	bare, err := master.NewRoles(w.store, nil, master.RolePolicy{})
	if err != nil {
		t.Fatal(err)
	}
	roster, err := bare.Roster(w.ctx, "g1", "c1")
	if err != nil || !slices.Equal(master.RoleNames(roster), master.RoleNames(master.DefaultRoles())) {
		t.Errorf("no file, nothing set: got %v, %v; want the built-in roles", master.RoleNames(roster), err)
	}
}
