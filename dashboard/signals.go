package dashboard

import (
	"bytes"
	"cmp"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
)

// signalView is a signal as the pages list it.
type signalView struct {
	SignalRow
	Signal  master.Signal // for master.DescribeSignal
	Pretty  string        // the payload, indented
	Guild   string
	TeamURL string
}

func signalViews(rows []SignalRow) []signalView {
	out := make([]signalView, len(rows))
	for i, r := range rows {
		var pretty bytes.Buffer
		if json.Indent(&pretty, r.Payload, "", "  ") != nil {
			pretty.Write(r.Payload)
		}
		out[i] = signalView{SignalRow: r, Pretty: pretty.String(), TeamURL: "/dashboard/teams/" + strconv.FormatInt(r.SessionID, 10),
			Signal: master.Signal{ID: r.ID, SessionID: r.SessionID, TaskID: r.TaskID, Kind: r.Kind, Payload: r.Payload, At: r.At, Role: r.Role}}
	}
	return out
}

// signalsView is the signals page.
type signalsView struct {
	Filter  signalFilter
	Kinds   []master.SignalKind
	Guilds  []guildOption
	Signals []signalView
	Problem string
	// Older is the query string of the next page, "" when this is the
	// last; JSON the query string of the same search as JSON lines.
	Older, JSON template.URL
}

type guildOption struct{ ID, Name string }

// maxGuildOptions bounds the servers the operator's search lists.
const maxGuildOptions = 500

// pageSize is how many signals a page of the trail shows.
const pageSize = 100

// signalQuery turns a form into a store query for the viewer: a guild
// the viewer may not see selects nothing (it is not an error: the form
// is the viewer's own).
func (d *Dashboard) signalQuery(f signalFilter, v viewer) (SignalQuery, string) {
	q := SignalQuery{Guilds: v.guilds(), Role: f.Role, BeforeID: f.Before, Limit: pageSize}
	if f.Kind != "" {
		q.Kinds = []master.SignalKind{master.SignalKind(f.Kind)}
	}
	if f.Guild != "" {
		if !v.allows(f.Guild) {
			q.Guilds = []string{}
		} else {
			q.Guilds = []string{f.Guild}
		}
	}
	var problem string
	if f.Team != "" {
		id, err := strconv.ParseInt(f.Team, 10, 64)
		if err != nil || id <= 0 {
			problem = "A team is its number, as in the address of its page."
		}
		q.SessionID = id
	}
	for _, t := range []struct {
		in  string
		out *time.Time
	}{{f.Since, &q.Since}, {f.Until, &q.Until}} {
		if t.in == "" {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02T15:04", t.in, time.UTC)
		if err != nil {
			problem = "Times are UTC, as 2026-03-01T09:30."
			continue
		}
		*t.out = at
	}
	return q, problem
}

func (d *Dashboard) signals(w http.ResponseWriter, r *http.Request, v viewer) {
	f := filterOf(r.URL.Query())
	q, problem := d.signalQuery(f, v)
	sv := signalsView{Filter: f, Kinds: signalKinds, Problem: problem}
	if problem == "" {
		rows, err := d.store.SearchSignals(r.Context(), q)
		if err != nil {
			d.readFailed(w, r, err)
			return
		}
		sv.Signals = signalViews(rows)
		if len(rows) == pageSize {
			older := filterQuery(f)
			older.Set("before", strconv.FormatInt(rows[len(rows)-1].ID, 10))
			sv.Older = template.URL(older.Encode())
		}
		sv.JSON = template.URL(filterQuery(f).Encode())
	}
	if v.Operator {
		guilds, err := d.store.Guilds(r.Context(), maxGuildOptions)
		if err == nil {
			for _, g := range guilds {
				sv.Guilds = append(sv.Guilds, guildOption{g, d.guildName(g)})
			}
		}
	} else {
		for _, g := range v.Guilds {
			sv.Guilds = append(sv.Guilds, guildOption{g, d.guildName(g)})
		}
	}
	slices.SortFunc(sv.Guilds, func(a, b guildOption) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	d.render(w, http.StatusOK, "signals", page{Title: "Signals", Viewer: &v, Nav: "signals", Data: sv})
}

// signalLine is a signal as `callon signals` prints it.
type signalLine struct {
	ID      int64           `json:"id"`
	Session int64           `json:"session"`
	Task    *int64          `json:"task,omitempty"`
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload"`
	At      time.Time       `json:"at"`
}

// signalsJSON is the same search as JSON lines, oldest first, in the
// format of `callon signals` (at most 500 lines: page with before).
func (d *Dashboard) signalsJSON(w http.ResponseWriter, r *http.Request, v viewer) {
	f := filterOf(r.URL.Query())
	q, problem := d.signalQuery(f, v)
	if problem != "" {
		writeError(w, http.StatusBadRequest, "bad_request", problem)
		return
	}
	q.Limit = maxJSONLines
	rows, err := d.store.SearchSignals(r.Context(), q)
	if err != nil {
		d.readFailed(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := len(rows) - 1; i >= 0; i-- {
		s := rows[i]
		line := signalLine{ID: s.ID, Session: s.SessionID, Kind: string(s.Kind), Payload: s.Payload, At: s.At.UTC()}
		if s.TaskID != 0 {
			line.Task = &rows[i].TaskID
		}
		if err := enc.Encode(line); err != nil {
			return
		}
	}
}

// maxJSONLines bounds one answer of signals.jsonl.
const maxJSONLines = 500
