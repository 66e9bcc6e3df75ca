package discordfake

import (
	"github.com/bwmarrin/discordgo"
)

// GatewayStats counts what happened on the gateway.
type GatewayStats struct {
	Connections   int // websocket connections accepted, ever
	Open          int // websocket connections open now
	Identifies    int // IDENTIFYs answered with READY
	Resumes       int // RESUMEs answered with a replay and RESUMED
	FailedResumes int // RESUMEs answered with INVALID_SESSION
	Heartbeats    int // heartbeats received (and acknowledged)
	Dropped       int // dispatches sent while no session (on their shard) existed, so lost

	IdentifyAttempts int // IDENTIFYs received, refused ones included; see IdentifyLog
	ResumeAttempts   int // RESUMEs received, refused ones included
	Closes           int // connections the server closed with a gateway close code
	LastCloseCode    int // the code of the latest such close, 0 if none
	Refused          int // connection attempts refused during a StopGateway outage
}

// Connected reports whether a gateway connection has identified or resumed.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.sess != nil {
			return true
		}
	}
	return false
}

// WaitConnected waits until a gateway connection has identified or resumed.
func (s *Server) WaitConnected() error {
	return s.WaitFor(s.Connected, "the bot to connect to the gateway")
}

// GatewayStats returns the gateway counters.
func (s *Server) GatewayStats() GatewayStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Open = len(s.conns)
	return st
}

// Intents returns the intents of the latest IDENTIFY.
func (s *Server) Intents() discordgo.Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intents
}

// DropGateway closes every gateway connection abruptly, as a network
// failure would. Sessions stay valid: discordgo reconnects (after the one
// second its Close sleeps) and resumes, and receives the dispatches sent in
// the meantime.
func (s *Server) DropGateway() {
	s.mu.Lock()
	var conns []*gwConn
	for c := range s.conns {
		if c.sess != nil {
			c.sess.conn = nil
			c.sess = nil
		}
		conns = append(conns, c)
	}
	s.notifyLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// InvalidateSession sends INVALID_SESSION (d: false) on every connection
// and forgets every session, so RESUMEs fail from now on. discordgo v0.29.0
// answers with a new IDENTIFY on the same connection.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.sessions {
		if sess.conn != nil {
			sess.conn.sendOp(opInvalidSession, false)
			sess.conn.sess = nil
		}
		delete(s.sessions, id)
	}
	s.notifyLocked()
}

// RequestReconnect sends RECONNECT (op 7) on every connection; discordgo
// closes it and resumes on a new one.
func (s *Server) RequestReconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.sendOp(opReconnect, nil)
	}
}

// RequestHeartbeat sends HEARTBEAT (op 1) on every connection; the client
// must answer with a heartbeat at once.
func (s *Server) RequestHeartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.sendOp(opHeartbeat, nil)
	}
}

// CloseGateway closes every gateway connection with a close code and
// reason, as Discord does when something goes wrong. After a code that
// allows resuming (4000 to 4003, 4005, 4008, or one outside 4000–4999)
// the sessions stay valid; after the others (4004, 4007, 4009 to 4014)
// they are forgotten, so a RESUME gets INVALID_SESSION. discordgo v0.29.0
// ignores the code: it reconnects after the second its Close sleeps, so a
// bot that must stop (on 4004, 4010 to 4014) has to do so itself; count
// its attempts with GatewayStats.
func (s *Server) CloseGateway(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.sess != nil {
			c.sess.conn = nil
			c.sess = nil
		}
		s.closeLocked(c, code, reason)
	}
	switch code {
	case 4004, 4007, 4009, 4010, 4011, 4012, 4013, 4014:
		clear(s.sessions)
	}
}

// RevokeToken invalidates the bot token, as resetting it in the Developer
// Portal does: from now on REST calls answer 401, IDENTIFY and RESUME are
// closed with 4004 "Authentication failed.", and open connections are
// closed with 4004 at once. discordgo keeps retrying with backoff, so use
// it only where the bot stops on its own or the test ends soon after.
func (s *Server) RevokeToken() {
	s.mu.Lock()
	s.revoked = true
	s.mu.Unlock()
	s.CloseGateway(4004, "Authentication failed.")
}

// StopGateway starts a gateway outage: every connection is dropped, as
// DropGateway does, and new ones are refused (HTTP 503 instead of the
// websocket upgrade; GatewayStats().Refused counts them) until
// StartGateway. Sessions stay valid, so the bot resumes once the outage
// ends. discordgo retries after 1, 2, 4… seconds, so end it promptly.
func (s *Server) StopGateway() {
	s.mu.Lock()
	s.outage = true
	s.mu.Unlock()
	s.DropGateway()
}

// StartGateway ends an outage StopGateway started.
func (s *Server) StartGateway() {
	s.mu.Lock()
	s.outage = false
	s.notifyLocked()
	s.mu.Unlock()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
