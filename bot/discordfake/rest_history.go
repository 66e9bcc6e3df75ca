package discordfake

import (
	"regexp"
	"slices"
	"strconv"
)

var snowflakeRE = regexp.MustCompile(`^[0-9]{1,20}$`)

// listMessages is GET /channels/{c}/messages: at most limit (1 to 100,
// default 50) messages, the bot's and everyone else's, newest first.
//
// before, after and around pick the window. Discord's reference (message
// resource, "Get Channel Messages") says they are mutually exclusive and
// that the array runs from newest to oldest whatever the window; the
// server answers 400 with code 50035 when more than one is given. That is
// stricter than Discord, which by a discord.js report silently uses one of
// them, but a bot passing two has a bug either way.
//
//   - before: the limit messages just older than the id.
//   - after: the limit messages just newer than the id, so that paging
//     forward with after set to the newest id of the previous page (the
//     first element) walks the history without gaps; after=0 starts at the
//     channel's first message, as on Discord.
//   - around: up to limit/2 messages older than the id and the rest from
//     the id on, the message itself included if it exists.
func (s *Server) listMessages(r *request) (int, any, *apiError) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fail(formError("NUMBER_TYPE_COERCE", "Value \""+v+"\" is not int.", "limit"))
		}
		if n < 1 || n > 100 {
			return fail(formError("NUMBER_TYPE_MAX", "int value should be between 1 and 100.", "limit"))
		}
		limit = n
	}
	var anchorKey string
	var anchor int64
	for _, k := range []string{"around", "before", "after"} {
		if !q.Has(k) {
			continue
		}
		v := q.Get(k)
		if !snowflakeRE.MatchString(v) {
			return fail(formError("NUMBER_TYPE_COERCE", "Value \""+v+"\" is not snowflake.", k))
		}
		if anchorKey != "" {
			return fail(formError("QUERY_PARAMS_EXCLUSIVE", "Only one of around, before and after may be given, not "+anchorKey+" and "+k+".", k))
		}
		anchorKey, anchor = k, snowflake(v)
	}

	c, e := s.channelOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	var visible []*message // oldest first; ids rise with creation
	for _, m := range s.byChan[c.id] {
		if !m.deleted {
			visible = append(visible, m)
		}
	}
	// first is the index of the first message at or after the anchor.
	first, _ := slices.BinarySearchFunc(visible, anchor, func(m *message, id int64) int {
		switch n := snowflake(m.id); {
		case n < id:
			return -1
		case n > id:
			return 1
		}
		return 0
	})
	var window []*message
	switch anchorKey {
	case "":
		window = visible[max(0, len(visible)-limit):]
	case "before":
		window = visible[max(0, first-limit):first]
	case "after":
		if first < len(visible) && snowflake(visible[first].id) == anchor {
			first++
		}
		window = visible[first:min(len(visible), first+limit)]
	case "around":
		older := limit / 2
		window = visible[max(0, first-older):min(len(visible), first+limit-older)]
	}
	out := make([]any, 0, len(window))
	for i := len(window) - 1; i >= 0; i-- {
		out = append(out, s.restMessageJSONLocked(window[i]))
	}
	return ok(out)
}
