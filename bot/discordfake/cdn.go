package discordfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"
)

// attachmentLifetime is how long a signed attachment URL works, as on
// Discord (about a day).
const attachmentLifetime = 24 * time.Hour

// UserAttachment is a file a user attaches to a message; see
// UserMessageWith.
type UserAttachment struct {
	Filename    string
	ContentType string // default: from the extension, else sniffed from Data
	Data        []byte
}

// fileRecord is an attachment the CDN serves.
type fileRecord struct {
	msg *message
	att Attachment
}

// CDNURL returns the base of the fake CDN that serves attachments, the
// fake's cdn.discordapp.com: an attachment's url is
// CDNURL()+"/attachments/<channel>/<id>/<filename>?ex=…&is=…&hm=…&".
func (s *Server) CDNURL() string { return s.url + "/cdn" }

// MediaURL returns the base of the fake media proxy, the fake's
// media.discordapp.net, on which attachments' proxy_url points.
func (s *Server) MediaURL() string { return s.url + "/media" }

// AttachmentDownloads returns how many times an attachment was downloaded
// from the fake CDN or media proxy; downloads with a bad or expired
// signature are not counted.
func (s *Server) AttachmentDownloads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[id]
}

// newAttachmentLocked files an uploaded file of m: it gets an id and
// signed URLs on the CDN and the media proxy, valid for a day from now.
func (s *Server) newAttachmentLocked(m *message, f Attachment) Attachment {
	f.ID = s.newID()
	if f.ContentType == "" {
		f.ContentType = sniffType(f.Filename, f.Data)
	}
	rel := "/attachments/" + m.channelID + "/" + f.ID + "/" + url.PathEscape(f.Filename)
	query := s.signLocked(rel, time.Now())
	f.URL = s.CDNURL() + rel + "?" + query
	f.ProxyURL = s.MediaURL() + rel + "?" + query
	s.files[f.ID] = &fileRecord{msg: m, att: f}
	return f
}

func sniffType(name string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(data)
}

// signLocked returns the query string of a signed URL: ex (expiry) and is
// (issued) as hex Unix seconds, and hm, a MAC over the path and both,
// ending in "&" as Discord's do.
func (s *Server) signLocked(rel string, issued time.Time) string {
	is := strconv.FormatInt(issued.Unix(), 16)
	ex := strconv.FormatInt(issued.Add(attachmentLifetime).Unix(), 16)
	return "ex=" + ex + "&is=" + is + "&hm=" + s.mac(rel, ex, is) + "&"
}

func (s *Server) mac(rel, ex, is string) string {
	h := hmac.New(sha256.New, s.cdnKey)
	_, _ = h.Write([]byte(rel + "\x00" + ex + "\x00" + is))
	return hex.EncodeToString(h.Sum(nil))
}

// serveAttachment is GET /cdn/attachments/{c}/{id}/{name} and its /media
// twin. Like Discord's CDN it answers 404 to an unknown file, a bad or
// expired signature, or a file of a deleted message; it needs no token.
func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	id, name, q := r.PathValue("id"), r.PathValue("name"), r.URL.Query()
	rel := "/attachments/" + r.PathValue("c") + "/" + id + "/" + url.PathEscape(name)
	ex, is := q.Get("ex"), q.Get("is")
	expiry, err := strconv.ParseInt(ex, 16, 64)
	valid := err == nil && hmac.Equal([]byte(q.Get("hm")), []byte(s.mac(rel, ex, is))) && time.Now().Unix() < expiry

	s.mu.Lock()
	f := s.files[id]
	ok := valid && f != nil && !f.msg.deleted && f.msg.channelID == r.PathValue("c") && f.att.Filename == name
	if ok {
		s.downloads[id]++
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.att.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.att.Data)))
	w.Header().Set("Cache-Control", "public, max-age=31536000")
	_, _ = w.Write(f.att.Data)
}
