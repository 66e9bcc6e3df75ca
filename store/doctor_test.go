package store_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

// A database that does not exist gets the createdb hint that a missing
// DATABASE_URL gets, naming the database.
func TestOpenMissingDatabaseHintsCreatedb(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/callon_missing_" + strings.ToLower(t.Name()[:4])
	_, err = store.Open(t.Context(), u.String(), nil)
	if err == nil {
		t.Fatal("Open of a missing database succeeded")
	}
	if want := "createdb callon_missing_test"; !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v; want the hint %q", err, want)
	}
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	w := setup(t)
	applied, known, err := w.store.SchemaVersion(w.ctx)
	if err != nil || applied != known || known < 11 {
		t.Errorf("SchemaVersion = %d, %d, %v; want the latest applied", applied, known, err)
	}
	if _, err := w.pool.Exec(w.ctx, `DROP TABLE schema_migrations`); err != nil {
		t.Fatal(err)
	}
	if applied, _, err := w.store.SchemaVersion(w.ctx); err != nil || applied != 0 {
		t.Errorf("SchemaVersion without schema_migrations = %d, %v; want 0", applied, err)
	}
}

// TeamChannels names the channels teams use: those with roles of their
// own and those of active teams, not guild-wide roles nor the terminal's.
func TestTeamChannels(t *testing.T) {
	t.Parallel()
	w := setup(t)
	role := master.Role{Name: "r", Description: "d", Prompt: "p"}
	if _, err := w.store.SetRole(w.ctx, master.RoleScope{GuildID: "1", ChannelID: "10"}, role, "u", 8); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.SetRole(w.ctx, master.RoleScope{GuildID: "1"}, role, "u", 8); err != nil {
		t.Fatal(err)
	}
	for _, s := range []master.Session{
		{GuildID: "1", ChannelID: "11", ThreadID: "111", OwnerID: "u", Goal: "g"},
		{GuildID: "terminal", ChannelID: "terminal", ThreadID: "t1", OwnerID: "u", Goal: "g"},
	} {
		if _, err := w.store.StartSession(w.ctx, s, []master.Role{role}, "k", "", master.SessionCaps{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := w.store.TeamChannels(w.ctx, 10)
	want := []master.RoleScope{{GuildID: "1", ChannelID: "10"}, {GuildID: "1", ChannelID: "11"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("TeamChannels = %v, %v; want %v", got, err, want)
	}
}
