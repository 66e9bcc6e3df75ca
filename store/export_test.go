package store

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool exposes the store's pool to tests, for fixtures and assertions
// below the API.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// SetListenerTimings shortens a listener's waits for tests.
func SetListenerTimings(l *Listener, idleCheck, minBackoff, maxBackoff time.Duration) {
	l.idleCheck, l.minBackoff, l.maxBackoff = idleCheck, minBackoff, maxBackoff
}

// Deliver hands a wake to a listener's subscribers as a notification would.
func Deliver(l *Listener, payload string) { l.deliver(payload) }

// SetLivenessTimings shortens a liveness's waits for tests.
func SetLivenessTimings(l *Liveness, backoff time.Duration) {
	l.minBackoff, l.maxBackoff = backoff, backoff
}
