package store_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

// wantVersions is every migration the binary embeds: the files of
// migrations/, numbered 1, 2, 3… (never a number written here, so that
// branches adding migrations do not collide on it).
var wantVersions = func() int {
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("no migrations found: %v", err))
	}
	return len(files)
}()

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := store.Open(ctx, storetest.EmptyURL(t), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Migrate(ctx); err != nil || n != wantVersions {
		t.Fatalf("first Migrate: got %d, %v, want %d", n, err, wantVersions)
	}
	if n, err := s.Migrate(ctx); err != nil || n != 0 {
		t.Fatalf("second Migrate: got %d, %v, want 0", n, err)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := storetest.EmptyURL(t)
	const migrators = 4
	var wg sync.WaitGroup
	applied := make([]int, migrators)
	errs := make([]error, migrators)
	for i := range migrators {
		wg.Go(func() {
			s, err := store.Open(ctx, url, slog.New(slog.DiscardHandler))
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			applied[i], errs[i] = s.Migrate(ctx)
		})
	}
	wg.Wait()
	total := 0
	for i := range migrators {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	if total != wantVersions {
		t.Errorf("got %d migrations applied in all (%v), want %d: each exactly once", total, applied, wantVersions)
	}
	s, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, maxV int
	if err := store.Pool(s).QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != wantVersions || maxV != wantVersions {
		t.Errorf("got %d versions recorded up to %d, want %d up to %d", n, maxV, wantVersions, wantVersions)
	}
}

func TestMigrateWithoutStore(t *testing.T) {
	t.Parallel()
	url := storetest.EmptyURL(t)
	if n, err := store.Migrate(t.Context(), url); err != nil || n != wantVersions {
		t.Fatalf("Migrate: got %d, %v, want %d", n, err, wantVersions)
	}
	if n, err := store.Migrate(t.Context(), url); err != nil || n != 0 {
		t.Fatalf("second Migrate: got %d, %v, want 0", n, err)
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	w := setup(t)
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future')`); err != nil {
		t.Fatal(err)
	}
	_, err := w.store.Migrate(w.ctx)
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("got %v, want an error saying the schema is newer than this binary", err)
	}
}
