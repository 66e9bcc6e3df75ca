package discordfake

import (
	"encoding/json"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Identify is an IDENTIFY the gateway received, accepted or not.
type Identify struct {
	At        time.Time
	Shard     [2]int // [shard_id, num_shards]; [0, 1] when the IDENTIFY had none
	Intents   discordgo.Intent
	CloseCode int // 0 when answered with READY, else the close code that refused it
}

// IdentifyLog returns every IDENTIFY the gateway received, oldest first.
func (s *Server) IdentifyLog() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.identifies...)
}

// tokenOKLocked reports whether a gateway token is the bot's and valid.
func (s *Server) tokenOKLocked(token string) bool {
	return !s.revoked && (token == "Bot "+s.cfg.token || token == s.cfg.token)
}

// closeLocked closes c with a gateway close code, after the frames queued
// before it, and counts it.
func (s *Server) closeLocked(c *gwConn, code int, reason string) {
	c.closeWith(code, reason)
	s.stats.Closes++
	s.stats.LastCloseCode = code
	s.notifyLocked()
}

// refusalLocked is the close code and reason with which Discord would
// refuse an IDENTIFY, or 0.
func (s *Server) refusalLocked(token string, intents discordgo.Intent, shard [2]int) (int, string) {
	switch {
	case !s.tokenOKLocked(token):
		return 4004, "Authentication failed."
	case intents&privilegedIntents&^s.cfg.privileged != 0:
		return 4014, "Disallowed intent(s)."
	}
	return s.shardRefusal(shard)
}

func (s *Server) identify(c *gwConn, raw json.RawMessage) {
	var d struct {
		Token   string           `json:"token"`
		Intents discordgo.Intent `json:"intents"`
		Shard   *[2]int          `json:"shard"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(4002, "Error while decoding payload.")
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.IdentifyAttempts++
	rec := Identify{At: time.Now(), Shard: [2]int{0, 1}, Intents: d.Intents}
	if d.Shard != nil {
		rec.Shard = *d.Shard
	}
	if code, reason := s.refusalLocked(d.Token, d.Intents, rec.Shard); code != 0 {
		rec.CloseCode = code
		s.identifies = append(s.identifies, rec)
		s.closeLocked(c, code, reason)
		return
	}
	if c.sess != nil {
		rec.CloseCode = 4005
		s.identifies = append(s.identifies, rec)
		s.closeLocked(c, 4005, "Already authenticated.")
		return
	}
	s.identifies = append(s.identifies, rec)
	sess := &gwSession{id: randomHex(16), intents: d.Intents, shard: rec.Shard, conn: c}
	c.sess = sess
	s.sessions[sess.id] = sess
	s.stats.Identifies++
	s.intents = d.Intents

	var guilds []any
	for _, g := range s.guilds {
		if sess.onShard(g.id) {
			guilds = append(guilds, map[string]any{"id": g.id, "unavailable": true})
		}
	}
	me := userJSON(s.bot)
	me["verified"] = true
	me["mfa_enabled"] = false
	me["flags"] = 0
	ready := map[string]any{
		"v":                       9,
		"user":                    me,
		"guilds":                  orEmpty(guilds),
		"session_id":              sess.id,
		"session_type":            "normal",
		"resume_gateway_url":      s.gatewayURL(),
		"application":             map[string]any{"id": s.cfg.appID, "flags": s.applicationFlags()},
		"private_channels":        []any{},
		"relationships":           []any{},
		"presences":               []any{},
		"guild_join_requests":     []any{},
		"geo_ordered_rtc_regions": []any{},
		"user_settings":           map[string]any{},
		"_trace":                  []string{"discordtest"},
	}
	if d.Shard != nil {
		ready["shard"] = rec.Shard
	}
	s.sendLocked(sess, "READY", ready)
	for _, g := range s.guilds {
		if sess.onShard(g.id) {
			s.sendLocked(sess, "GUILD_CREATE", s.guildJSONLocked(g))
		}
	}
	s.notifyLocked()
}

func (s *Server) resume(c *gwConn, raw json.RawMessage) {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(4002, "Error while decoding payload.")
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	s.stats.ResumeAttempts++
	if !s.tokenOKLocked(d.Token) {
		s.closeLocked(c, 4004, "Authentication failed.")
		return
	}
	sess := s.sessions[d.SessionID]
	if sess == nil || c.sess != nil {
		s.stats.FailedResumes++
		c.sendOp(opInvalidSession, false)
		return
	}
	if old := sess.conn; old != nil && old != c {
		old.sess = nil
		old.close()
	}
	sess.conn = c
	c.sess = sess
	for _, f := range sess.log {
		if f.seq > d.Seq {
			c.send(f.data)
		}
	}
	s.sendLocked(sess, "RESUMED", map[string]any{"_trace": []string{"discordtest"}})
	s.stats.Resumes++
}

// applicationFlags are the application's GATEWAY_*_LIMITED flags: the
// privileged intents enabled in the Developer Portal.
func (s *Server) applicationFlags() int {
	flags := 0
	if s.cfg.privileged&discordgo.IntentGuildPresences != 0 {
		flags |= 1 << 13 // GATEWAY_PRESENCE_LIMITED
	}
	if s.cfg.privileged&discordgo.IntentGuildMembers != 0 {
		flags |= 1 << 15 // GATEWAY_GUILD_MEMBERS_LIMITED
	}
	if s.cfg.privileged&discordgo.IntentMessageContent != 0 {
		flags |= 1 << 19 // GATEWAY_MESSAGE_CONTENT_LIMITED
	}
	return flags
}
