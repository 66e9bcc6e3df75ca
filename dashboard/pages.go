package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
)

// guildView is a guild's overview as the page shows it.
type guildView struct {
	GuildDay
	Name string
	// Tokens today, the budget in effect (0: none), the share used, the
	// cost where prices are known.
	Tokens int64
	Budget int64
	Used   float64
	Cost   string
	// Chart is the tasks-by-hour data for uPlot: [[hours], [done],
	// [others]], as JSON.
	Chart string
}

func (d *Dashboard) overviewData(r *http.Request, v viewer) ([]guildView, error) {
	days, err := d.store.Overview(r.Context(), v.guilds(), d.cfg.Now())
	if err != nil {
		return nil, err
	}
	if !v.Operator { // an admin's servers all show, with nothing yet or not
		for _, g := range v.Guilds {
			if !slices.ContainsFunc(days, func(x GuildDay) bool { return x.GuildID == g }) {
				days = append(days, GuildDay{GuildID: g})
			}
		}
	}
	out := make([]guildView, 0, len(days))
	for _, day := range days {
		if !v.allows(day.GuildID) { // the store filtered; this is the second lock
			continue
		}
		gv := guildView{GuildDay: day, Name: d.guildName(day.GuildID), Budget: cmp.Or(day.DailyBudget, d.cfg.DailyBudget)}
		for _, u := range day.Usage {
			gv.Tokens += u.Total()
		}
		gv.Cost = d.cfg.Prices.Cost(day.Usage).String()
		if gv.Budget > 0 {
			gv.Used = min(float64(gv.Tokens)/float64(gv.Budget), 1)
		}
		hours := make([]int, 24)
		for i := range hours {
			hours[i] = i
		}
		chart, _ := json.Marshal([][]int{hours, day.DoneByHour[:], day.OtherByHour[:]})
		gv.Chart = string(chart)
		out = append(out, gv)
	}
	slices.SortFunc(out, func(a, b guildView) int { return cmp.Compare(a.Name+a.GuildID, b.Name+b.GuildID) })
	return out, nil
}

func (d *Dashboard) guildName(id string) string {
	if d.cfg.GuildName != nil {
		if n := d.cfg.GuildName(id); n != "" {
			return n
		}
	}
	return "Server " + id
}

// readFailed answers a read that failed, logged once here.
// A team the viewer may not see, or that does not exist, is "no such
// team" alike.
func (d *Dashboard) readFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNotVisible) {
		d.fail(w, r, http.StatusNotFound, "There is no such team.")
		return
	}
	if r.Context().Err() != nil {
		return
	}
	d.log.Error("dashboard: a read failed", "path", r.URL.Path, "err", err)
	d.fail(w, r, http.StatusInternalServerError, "The database did not answer: try again.")
}

// teamView is a team's page.
type teamView struct {
	Team
	GuildName string
	Members   []memberView
	Timelines []timeline
	Signals   []signalView
	Filter    signalFilter
	Kinds     []master.SignalKind
	Query     template.URL // the filter's query string, for the live part
}

// memberView is a member with its live state.
type memberView struct {
	Role   master.Role
	State  string // idle, working, blocked, waiting for approval
	Queued int
}

// signalFilter is a signals form's values.
type signalFilter struct {
	Kind, Role, Team, Guild, Since, Until string
	Before                                int64
}

func (d *Dashboard) teamData(r *http.Request, v viewer) (*teamView, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, errNotVisible
	}
	t, err := d.store.Team(r.Context(), id, 10)
	if errors.Is(err, master.ErrNotFound) {
		return nil, errNotVisible
	}
	if err != nil {
		return nil, err
	}
	if !v.allows(t.Session.GuildID) { // another server's team is one that does not exist
		return nil, errNotVisible
	}
	if t.DispatchedBy.ID != 0 && !v.allows(t.DispatchedBy.GuildID) {
		t.DispatchedBy = master.Session{}
	}
	t.Dispatched = slices.DeleteFunc(t.Dispatched, func(s master.Session) bool { return !v.allows(s.GuildID) })
	f := filterOf(r.URL.Query())
	q := SignalQuery{Guilds: v.guilds(), SessionID: id, Role: f.Role, Limit: 100}
	if f.Kind != "" {
		q.Kinds = []master.SignalKind{master.SignalKind(f.Kind)}
	}
	sigs, err := d.store.SearchSignals(r.Context(), q)
	if err != nil {
		return nil, err
	}
	tv := &teamView{Team: t, GuildName: d.guildName(t.Session.GuildID), Filter: f, Kinds: signalKinds,
		Query: template.URL(filterQuery(f).Encode())}
	now := d.cfg.Now()
	var current *TurnLine
	if len(t.Turns) > 0 {
		current = &t.Turns[0]
	}
	tv.Members = members(t.Roster, current)
	for _, l := range t.Turns {
		tv.Timelines = append(tv.Timelines, layout(l, now))
	}
	tv.Signals = signalViews(sigs)
	return tv, nil
}

// members derives each member's live state from the latest turn: as
// /team does, and "waiting for approval" apart from blocked.
func members(roster []master.Role, l *TurnLine) []memberView {
	var turn *master.Turn
	var tasks []master.Task
	if l != nil {
		turn, tasks = &l.Turn, l.Tasks
	}
	out := make([]memberView, 0, len(roster))
	for _, m := range master.Members(roster, turn, tasks) {
		mv := memberView{Role: m.Role, State: string(m.State)}
		for _, t := range tasks {
			if t.Role != m.Role.Name {
				continue
			}
			switch t.State {
			case master.TaskApproval:
				mv.State = "waiting for approval"
			case master.TaskQueued:
				mv.Queued++
			}
		}
		out = append(out, mv)
	}
	return out
}

// rolesView is the roles page: records by guild, then channel.
type rolesView struct {
	Window  string
	Windows []string
	Guilds  []rolesGuild
}

type rolesGuild struct {
	GuildID, Name string
	Channels      []rolesChannel
}

type rolesChannel struct {
	ChannelID string
	Roles     []master.Reliability
}

// windows are the roles page's choices.
var windows = map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

func (d *Dashboard) rolesData(r *http.Request, v viewer) (rolesView, error) {
	win := r.URL.Query().Get("window")
	if _, ok := windows[win]; !ok {
		win = "7d"
	}
	recs, err := d.store.Reliability(r.Context(), master.ReliabilityQuery{Guilds: v.guilds(), Since: d.cfg.Now().Add(-windows[win])})
	if err != nil {
		return rolesView{}, err
	}
	rv := rolesView{Window: win, Windows: []string{"24h", "7d", "30d"}}
	for _, rec := range recs {
		if !v.allows(rec.GuildID) {
			continue
		}
		if n := len(rv.Guilds); n == 0 || rv.Guilds[n-1].GuildID != rec.GuildID {
			rv.Guilds = append(rv.Guilds, rolesGuild{GuildID: rec.GuildID, Name: d.guildName(rec.GuildID)})
		}
		g := &rv.Guilds[len(rv.Guilds)-1]
		if n := len(g.Channels); n == 0 || g.Channels[n-1].ChannelID != rec.ChannelID {
			g.Channels = append(g.Channels, rolesChannel{ChannelID: rec.ChannelID})
		}
		c := &g.Channels[len(g.Channels)-1]
		c.Roles = append(c.Roles, rec)
	}
	return rv, nil
}

// filterOf reads a signals form.
func filterOf(q url.Values) signalFilter {
	f := signalFilter{Kind: q.Get("kind"), Role: q.Get("role"), Team: q.Get("team"), Guild: q.Get("guild"),
		Since: q.Get("since"), Until: q.Get("until")}
	if !slices.Contains(signalKinds, master.SignalKind(f.Kind)) {
		f.Kind = ""
	}
	f.Before, _ = strconv.ParseInt(q.Get("before"), 10, 64)
	return f
}

// filterQuery is a filter as a query string (without its page).
func filterQuery(f signalFilter) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"kind": f.Kind, "role": f.Role, "team": f.Team, "guild": f.Guild, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// signalKinds are the kinds a filter offers.
var signalKinds = []master.SignalKind{master.SignalAck, master.SignalProgress, master.SignalTaskComplete, master.SignalBlocked,
	master.SignalNeedInfo, master.SignalHandoff, master.SignalReport, master.SignalWebhook, master.SignalTool, master.SignalNeedApproval,
	master.SignalReviewPassed, master.SignalReviewRevised}

// views answers a page and its live part from one read: the whole page,
// and the part its event stream makes the page fetch again.
func views[T any](d *Dashboard, name, nav string, read func(*http.Request, viewer) (T, error),
	title func(T) string) (full, live func(http.ResponseWriter, *http.Request, viewer)) {
	full = func(w http.ResponseWriter, r *http.Request, v viewer) {
		data, err := read(r, v)
		if err != nil {
			d.readFailed(w, r, err)
			return
		}
		d.render(w, http.StatusOK, name, page{Title: title(data), Viewer: &v, Nav: nav, Data: data})
	}
	live = func(w http.ResponseWriter, r *http.Request, v viewer) {
		data, err := read(r, v)
		if err != nil {
			d.readFailed(w, r, err)
			return
		}
		d.renderPart(w, name, "live", page{Viewer: &v, Data: data})
	}
	return full, live
}
