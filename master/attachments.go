package master

import (
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"
)

// AttachmentState is where a file attached to a message stands.
type AttachmentState string

// Attachment states. Only pending changes: the fetcher resolves it to one
// of the others, and a turn with a pending file waits for it.
const (
	AttachmentPending AttachmentState = "pending" // to be downloaded
	AttachmentStored  AttachmentState = "stored"  // downloaded: Data holds the file
	AttachmentSkipped AttachmentState = "skipped" // never read, by rule (size, type, address): Note says why
	AttachmentFailed  AttachmentState = "failed"  // the download failed: Note says how
)

// AttachmentKind is how a model is shown a file.
type AttachmentKind string

// Attachment kinds.
const (
	KindText  AttachmentKind = "text"  // shown as bounded text
	KindImage AttachmentKind = "image" // an image part, for a model that sees images
	KindOther AttachmentKind = "other" // named with a note; never downloaded
)

// Attachment is a file attached to a user's message: part of its turn,
// stored before anything reads it, downloaded at most once.
type Attachment struct {
	ID          int64
	SessionID   int64
	TurnID      int64
	Position    int    // order in the message, from 0
	FileID      string // the platform's id of the file
	Name        string // the file's name, unique within its message
	ContentType string
	Size        int64  // bytes: as the message declared it, then as downloaded
	URL         string // where it is downloaded from, under the CDN; "" when nowhere
	Kind        AttachmentKind
	State       AttachmentState
	Note        string // why it was not read, in words for the user
	Attempts    int    // downloads tried
	Data        []byte // the file, once stored
}

// Readable reports whether a model can be given the file's content.
func (a Attachment) Readable() bool { return a.State == AttachmentStored }

// IncomingAttachment is a file on a message, as the platform describes
// it.
type IncomingAttachment struct {
	ID          string
	Filename    string
	ContentType string
	Size        int64
	URL         string // on the CDN, signed
	ProxyURL    string // on the media proxy, signed
}

// Defaults of AttachmentPolicy.
const (
	DefaultAttachmentMaxFile    = 8 << 20  // bytes of one file
	DefaultAttachmentMaxMessage = 16 << 20 // bytes of a message's files together
)

// AttachmentPolicy decides which files of a message are downloaded.
type AttachmentPolicy struct {
	// CDN lists the URL bases files may be downloaded from; nothing else
	// is ever fetched. Empty means DefaultCDNURL and DefaultMediaURL.
	CDN        []string
	MaxFile    int64 // bytes of one file
	MaxMessage int64 // bytes of a message's files together
}

func (p AttachmentPolicy) withDefaults() AttachmentPolicy {
	if len(p.CDN) == 0 {
		p.CDN = []string{DefaultCDNURL, DefaultMediaURL}
	}
	if p.MaxFile <= 0 {
		p.MaxFile = DefaultAttachmentMaxFile
	}
	if p.MaxMessage <= 0 {
		p.MaxMessage = DefaultAttachmentMaxMessage
	}
	return p
}

// Plan turns a message's files into the attachments of its turn: those
// to download are pending, with the URL to fetch them from; the others
// are skipped at once with a note that says why. Nothing here does I/O.
func (p AttachmentPolicy) Plan(files []IncomingAttachment) []Attachment {
	p = p.withDefaults()
	out := make([]Attachment, 0, len(files))
	seen := map[string]bool{}
	var total int64
	for i, f := range files {
		a := Attachment{
			Position:    i,
			FileID:      f.ID,
			Name:        uniqueName(validText(strings.TrimSpace(f.Filename)), seen),
			ContentType: f.ContentType,
			Size:        max(f.Size, 0),
			State:       AttachmentPending,
		}
		a.Kind = Classify(a.Name, a.ContentType)
		for _, u := range []string{f.URL, f.ProxyURL} {
			if UnderBase(u, p.CDN) {
				a.URL = u
				break
			}
		}
		switch {
		case a.Kind == KindOther:
			a.State, a.Note = AttachmentSkipped, "callon reads only text files and images"
		case a.URL == "":
			a.State, a.Note = AttachmentSkipped, noteNotOnCDN
		case a.Size > p.MaxFile:
			a.State, a.Note = AttachmentSkipped, "larger than the "+FormatSize(p.MaxFile)+" limit per file"
		case total+a.Size > p.MaxMessage:
			a.State, a.Note = AttachmentSkipped, "the message's files together are over the "+FormatSize(p.MaxMessage)+" limit"
		default:
			total += a.Size
		}
		out = append(out, a)
	}
	return out
}

// uniqueName returns name, or "name (2).ext" and so on when the message
// has a file of that name already, so the master can name each one.
func uniqueName(name string, seen map[string]bool) string {
	name = strings.NewReplacer("\n", " ", "\r", " ").Replace(Truncate(name, 200))
	if name == "" {
		name = "file"
	}
	out := name
	ext := path.Ext(name)
	for n := 2; seen[strings.ToLower(out)]; n++ {
		out = fmt.Sprintf("%s (%d)%s", strings.TrimSuffix(name, ext), n, ext)
	}
	seen[strings.ToLower(out)] = true
	return out
}

// UnderBase reports whether u is an http(s) URL under one of bases: the
// same scheme and host, and a path inside the base's. A look-alike host
// ("cdn.discordapp.com.example") or a path beside the base's is not.
func UnderBase(u string, bases []string) bool {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.User != nil || p.Host == "" {
		return false
	}
	for _, b := range bases {
		bp, err := url.Parse(strings.TrimRight(b, "/"))
		if err != nil || bp.Host == "" {
			continue
		}
		if strings.EqualFold(p.Scheme, bp.Scheme) && strings.EqualFold(p.Host, bp.Host) &&
			strings.HasPrefix(path.Clean("/"+p.Path), bp.Path+"/") {
			return true
		}
	}
	return false
}

// imageTypes are the images vision models accept.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// textTypes are content types outside text/* that hold text.
var textTypes = map[string]bool{
	"application/json": true, "application/xml": true, "application/yaml": true, "application/x-yaml": true,
	"application/toml": true, "application/javascript": true, "application/x-javascript": true,
	"application/typescript": true, "application/x-sh": true, "application/x-shellscript": true,
	"application/sql": true, "application/x-httpd-php": true, "application/x-python": true,
	"application/x-ndjson": true, "application/graphql": true, "application/csv": true,
}

// textExtensions are file extensions of text, source code and data that
// browsers and chat clients often label application/octet-stream.
var textExtensions = map[string]bool{
	".txt": true, ".md": true, ".markdown": true, ".rst": true, ".adoc": true, ".org": true, ".tex": true,
	".csv": true, ".tsv": true, ".json": true, ".jsonl": true, ".ndjson": true, ".xml": true, ".yaml": true,
	".yml": true, ".toml": true, ".ini": true, ".cfg": true, ".conf": true, ".properties": true, ".env": true,
	".log": true, ".diff": true, ".patch": true, ".sql": true, ".graphql": true, ".proto": true,
	".html": true, ".htm": true, ".css": true, ".scss": true, ".sass": true, ".less": true, ".svg": true,
	".go": true, ".py": true, ".rb": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".tsx": true,
	".jsx": true, ".vue": true, ".svelte": true, ".java": true, ".kt": true, ".kts": true, ".scala": true,
	".groovy": true, ".gradle": true, ".c": true, ".h": true, ".cc": true, ".cpp": true, ".hpp": true,
	".cs": true, ".fs": true, ".rs": true, ".swift": true, ".m": true, ".php": true, ".pl": true, ".lua": true,
	".r": true, ".jl": true, ".dart": true, ".ex": true, ".exs": true, ".erl": true, ".hs": true, ".clj": true,
	".elm": true, ".zig": true, ".nim": true, ".sh": true, ".bash": true, ".zsh": true, ".fish": true,
	".ps1": true, ".bat": true, ".tf": true, ".hcl": true, ".nix": true, ".mk": true, ".cmake": true,
	".dockerfile": true, ".gitignore": true, ".editorconfig": true, ".ipynb": true,
}

// textNames are well-known files without an extension that hold text.
var textNames = map[string]bool{
	"makefile": true, "dockerfile": true, "readme": true, "license": true, "changelog": true,
	"gemfile": true, "procfile": true, "jenkinsfile": true, "vagrantfile": true, "justfile": true,
}

// Classify says how a model is shown a file with this name and content
// type: text (text/*, JSON, YAML, CSV, Markdown, source code by extension
// or type), an image a vision model accepts, or other.
func Classify(name, contentType string) AttachmentKind {
	ct, _, _ := mime.ParseMediaType(contentType)
	ct = strings.ToLower(ct)
	ext := strings.ToLower(path.Ext(name))
	switch {
	case imageTypes[ct]:
		return KindImage
	case ct == "" && (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".gif" || ext == ".webp"):
		return KindImage
	case ext == ".svg" || ct == "image/svg+xml":
		return KindText // an SVG is XML: readable as text, not as an image part
	case strings.HasPrefix(ct, "image/"), strings.HasPrefix(ct, "audio/"), strings.HasPrefix(ct, "video/"):
		return KindOther
	case strings.HasPrefix(ct, "text/"), textTypes[ct], strings.HasSuffix(ct, "+json"), strings.HasSuffix(ct, "+xml"):
		return KindText
	case textExtensions[ext], ext == "" && textNames[strings.ToLower(name)]:
		return KindText
	}
	return KindOther
}

// FormatSize writes a byte count for people: "512 bytes", "340 KB",
// "3.2 MB".
func FormatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KB", (n+1<<9)>>10)
	case n < 10<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
	default:
		return fmt.Sprintf("%d MB", (n+1<<19)>>20)
	}
}
