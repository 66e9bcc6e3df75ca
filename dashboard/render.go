package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// page is what every template gets: the title, the viewer (for the
// menu), and the page's own data.
type page struct {
	Title  string
	Viewer *viewer
	Nav    string // the menu entry to mark
	Data   any
}

// pageNames are the templates that are whole pages; each also defines
// its live part, rendered alone for the live updates.
var pageNames = []string{"login", "error", "overview", "team", "roles", "signals"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"elapsed":  master.Elapsed,
		"tokens":   master.Tokens,
		"pct":      func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
		"ago":      ago,
		"utc":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"describe": func(s master.Signal) string { return strings.ReplaceAll(master.DescribeSignal(s), "**", "") },
		"threadURL": func(guild, thread string) string {
			return "https://discord.com/channels/" + guild + "/" + thread
		},
		"stateClass": stateClass,
		"short":      func(s string, n int) string { return master.Truncate(strings.TrimSpace(s), n) },
		"oneline":    func(s string) string { return strings.Join(strings.Fields(s), " ") },
		"x5":         func(i int) int { return 5 * i },
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return out
}

// render writes a whole page.
func (d *Dashboard) render(w http.ResponseWriter, status int, name string, p page) {
	d.write(w, status, name, "layout", p)
}

// renderPart writes one template of a page alone (a live part).
func (d *Dashboard) renderPart(w http.ResponseWriter, name, part string, p page) {
	d.write(w, http.StatusOK, name, part, p)
}

func (d *Dashboard) write(w http.ResponseWriter, status int, name, tmpl string, p page) {
	var buf bytes.Buffer
	if err := d.pages[name].ExecuteTemplate(&buf, tmpl, p); err != nil {
		d.log.Error("dashboard: rendering failed", "page", name, "template", tmpl, "err", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// ago is a time as "3 m 05 s ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return master.Elapsed(time.Since(t)) + " ago"
}

// stateClass is the CSS class of a state's colour.
func stateClass(state any) string {
	switch fmt.Sprint(state) {
	case "done", "approved", "sent":
		return "ok"
	case "running", "working", "active", "queued":
		return "run"
	case "failed", "timeout", "denied", "expired", "refused":
		return "bad"
	case "blocked", "need_info", "waiting", "approval", "pending", "waiting for approval":
		return "warn"
	}
	return "dim"
}
