package discordfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// privilegedIntents need a switch in the Developer Portal.
const privilegedIntents = discordgo.IntentGuildMembers | discordgo.IntentGuildPresences | discordgo.IntentMessageContent

// gwSession is a gateway session: it outlives its connections, and its log
// of dispatches lets a RESUME replay what the bot missed.
type gwSession struct {
	id      string
	intents discordgo.Intent
	shard   [2]int // [shard_id, num_shards]
	seq     int64
	log     []gwFrame
	conn    *gwConn // nil while the bot is disconnected
}

type gwFrame struct {
	seq  int64
	data []byte
}

// gwConn is one websocket connection. Frames are written in order by its
// own goroutine, so the server never blocks on a socket while holding s.mu.
type gwConn struct {
	ws   *websocket.Conn
	wake chan struct{}
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	queue []outFrame

	sess *gwSession // guarded by Server.mu
}

type outFrame struct {
	data      []byte
	closeCode int // when set, send a close frame with data as its text, then close
}

func (c *gwConn) push(f outFrame) {
	c.mu.Lock()
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *gwConn) send(data []byte) { c.push(outFrame{data: data}) }

func (c *gwConn) sendOp(op int, d any) {
	data, _ := json.Marshal(map[string]any{"op": op, "d": d, "s": nil, "t": nil})
	c.send(data)
}

// closeWith closes the connection with a gateway close code once the
// frames queued before it are written.
func (c *gwConn) closeWith(code int, text string) {
	c.push(outFrame{data: []byte(text), closeCode: code})
}

// close drops the connection at once, without a close frame.
func (c *gwConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *gwConn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, f := range q {
			deadline := time.Now().Add(10 * time.Second)
			if f.closeCode != 0 {
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(f.closeCode, string(f.data)), deadline)
				c.close()
				return
			}
			_ = c.ws.SetWriteDeadline(deadline)
			if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
				c.close()
				return
			}
		}
	}
}

func (s *Server) gatewayURL() string {
	return "ws" + strings.TrimPrefix(s.url, "http") + "/gateway"
}

func (s *Server) handleGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	outage := s.outage
	s.stats.Refused += btoi(outage)
	s.mu.Unlock()
	if outage {
		http.Error(w, "gateway unavailable", http.StatusServiceUnavailable)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has replied
	}
	c := &gwConn{ws: ws, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.stats.Connections++
	s.wg.Add(2)
	s.notifyLocked()
	s.mu.Unlock()
	defer s.wg.Done()
	go func() {
		defer s.wg.Done()
		c.writeLoop()
	}()

	c.sendOp(opHello, map[string]any{"heartbeat_interval": s.cfg.heartbeat.Milliseconds()})
	if v := r.URL.Query().Get("v"); v != "" && v != "9" {
		c.closeWith(4012, "Invalid API version.")
	}
	s.readLoop(c)
}

func (s *Server) readLoop(c *gwConn) {
	defer func() {
		s.mu.Lock()
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		c.sess = nil
		delete(s.conns, c)
		s.notifyLocked()
		s.mu.Unlock()
		c.close()
	}()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			c.closeWith(4002, "Error while decoding payload.")
			continue
		}
		switch p.Op {
		case opHeartbeat:
			s.mu.Lock()
			s.stats.Heartbeats++
			s.notifyLocked()
			s.mu.Unlock()
			c.sendOp(opHeartbeatAck, nil)
		case opIdentify:
			s.identify(c, p.D)
		case opResume:
			s.resume(c, p.D)
		}
	}
}

// sendLocked logs a dispatch in sess and sends it if sess is connected.
func (s *Server) sendLocked(sess *gwSession, event string, d any) {
	sess.seq++
	data, err := json.Marshal(map[string]any{"op": opDispatch, "s": sess.seq, "t": event, "d": d})
	if err != nil {
		panic("discordtest: marshal " + event + ": " + err.Error())
	}
	sess.log = append(sess.log, gwFrame{seq: sess.seq, data: data})
	if sess.conn != nil {
		sess.conn.send(data)
	}
}

// requiredIntent is the intent a session needs to receive an event.
func requiredIntent(event string) discordgo.Intent {
	switch {
	case strings.HasPrefix(event, "MESSAGE_REACTION_"):
		return discordgo.IntentGuildMessageReactions
	case strings.HasPrefix(event, "MESSAGE_"):
		return discordgo.IntentGuildMessages
	case strings.HasPrefix(event, "THREAD_"), strings.HasPrefix(event, "CHANNEL_"), strings.HasPrefix(event, "GUILD_"):
		return discordgo.IntentGuilds
	}
	return 0
}

// dispatchLocked sends an event to every session that asked for it, on
// the shard of the event's guild.
// Sessions without MESSAGE_CONTENT get stripped, unless the message is the
// bot's own or mentions it.
func (s *Server) dispatchLocked(event string, d map[string]any) {
	guildID, _ := d["guild_id"].(string)
	delivered := false
	for _, sess := range s.sessions {
		if !sess.onShard(guildID) {
			continue
		}
		delivered = true
		if need := requiredIntent(event); need != 0 && sess.intents&need == 0 {
			continue
		}
		payload := d
		if (event == "MESSAGE_CREATE" || event == "MESSAGE_UPDATE") && sess.intents&discordgo.IntentMessageContent == 0 && !s.contentVisible(d) {
			payload = withoutContent(d)
		}
		s.sendLocked(sess, event, payload)
	}
	if !delivered {
		s.stats.Dropped++
	}
	s.notifyLocked()
}

func (s *Server) contentVisible(msg map[string]any) bool {
	if author, ok := msg["author"].(map[string]any); ok && author["id"] == s.bot.id {
		return true
	}
	content, _ := msg["content"].(string)
	return strings.Contains(content, "<@"+s.bot.id+">") || strings.Contains(content, "<@!"+s.bot.id+">")
}
