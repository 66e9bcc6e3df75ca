package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// signals prints a session's signals as JSON lines, oldest first: every
// session a thread has had with --thread, or one with --session.
func signals(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	var thread *string
	var session *int64
	ok, err := parseCommand("signals", "print a team's signals as JSON lines, oldest first: every session a thread has had, or one session",
		args, stderr, func(fs *flag.FlagSet) {
			thread = fs.String("thread", "", "the Discord thread id of a team")
			session = fs.Int64("session", 0, "a session id")
		})
	if !ok {
		return err
	}
	if (*thread == "") == (*session == 0) {
		return errors.New("give exactly one of --thread ID or --session ID")
	}
	if err := cfg.Validate(config.NeedDatabase); err != nil {
		return configError(err)
	}
	log := newLogger(cfg, stderr)
	st, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	ids := []int64{*session}
	if *session != 0 {
		if _, err := st.Session(ctx, *session); errors.Is(err, master.ErrNotFound) {
			return fmt.Errorf("there is no session %d", *session)
		} else if err != nil {
			return err
		}
	}
	if *thread != "" {
		if ids, err = st.ThreadSessions(ctx, *thread); err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("thread %s has had no team session", *thread)
		}
	}
	enc := json.NewEncoder(stdout)
	for _, id := range ids {
		for after := int64(0); ; {
			page, err := st.Signals(ctx, id, after, 500)
			if err != nil {
				return err
			}
			for _, s := range page {
				line := struct {
					ID      int64           `json:"id"`
					Session int64           `json:"session"`
					Task    *int64          `json:"task,omitempty"`
					Kind    string          `json:"kind"`
					Payload json.RawMessage `json:"payload"`
					At      time.Time       `json:"at"`
				}{s.ID, s.SessionID, nil, string(s.Kind), s.Payload, s.At.UTC()}
				if s.TaskID != 0 {
					line.Task = &s.TaskID
				}
				if err := enc.Encode(line); err != nil {
					return err
				}
				after = s.ID
			}
			if len(page) < 500 {
				break
			}
		}
	}
	return nil
}
