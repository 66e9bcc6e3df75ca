package master

import (
	"cmp"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"
)

// Bounds on the text of attached files a model is shown, so a context
// stays bounded whatever people attach.
const (
	MaxAttachmentChars  = 12000 // one text file
	MaxAttachmentsChars = 40000 // a message's text files together
)

// RenderAttachments is how a model is shown a message's files: a block of
// text naming each one, with the content of text files (bounded), and the
// images as image parts when vision is set (a note naming each one
// otherwise). A file that was not read is named with the reason.
func RenderAttachments(atts []Attachment, vision bool) (string, []Image) {
	if len(atts) == 0 {
		return "", nil
	}
	var b strings.Builder
	var images []Image
	b.WriteString("Files attached to this message:")
	budget := MaxAttachmentsChars
	for _, a := range atts {
		fmt.Fprintf(&b, "\n- %s (%s):", a.Name, describeFile(a))
		switch {
		case a.State == AttachmentPending:
			b.WriteString(" not read: it was still being downloaded.")
		case !a.Readable():
			fmt.Fprintf(&b, " not read: %s.", a.Note)
		case a.Kind == KindText:
			text, total := clip(a.Data, min(MaxAttachmentChars, budget))
			shown := utf8.RuneCountInString(text)
			budget -= shown
			if shown == 0 && total > 0 {
				b.WriteString(" not shown: the other files took all the room for text.")
				continue
			}
			fmt.Fprintf(&b, "\n----- begin %s -----\n%s\n----- end %s -----", a.Name, text, a.Name)
			if shown < total {
				fmt.Fprintf(&b, "\n(shortened: the first %d of %d characters)", shown, total)
			}
		case a.Kind == KindImage && vision:
			b.WriteString(" an image, attached to this message.")
			images = append(images, Image{Name: a.Name, ContentType: mediaType(a.ContentType), Data: a.Data})
		case a.Kind == KindImage:
			b.WriteString(" an image; your model cannot see images, so you know only its name.")
		default:
			b.WriteString(" not read.")
		}
	}
	return b.String(), images
}

// describeFile is a file's type and size, for a model or a person.
func describeFile(a Attachment) string {
	if ct := mediaType(a.ContentType); ct != "" {
		return ct + ", " + FormatSize(a.Size)
	}
	return FormatSize(a.Size)
}

// mediaType is a content type without its parameters.
func mediaType(ct string) string {
	t, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	return t
}

// clip returns the first max characters of a text file (as valid UTF-8,
// without a byte order mark) and how many it has.
func clip(data []byte, max int) (string, int) {
	s := strings.TrimRight(strings.TrimPrefix(validText(string(data)), "\uFEFF"), "\r\n")
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s, total
	}
	return s[:byteOffset(s, max)], total
}

// attachmentNames lists the names of the stored files, which the master
// may hand to workers.
func attachmentNames(atts []Attachment) []string {
	var names []string
	for _, a := range atts {
		if a.Readable() {
			names = append(names, a.Name)
		}
	}
	return names
}

// unreadNotice is a line for the end of a turn's reply naming the files
// nobody read that the text does not name already: too large, of a type
// callon does not read, not on the CDN, failed to download, or an image
// that neither the master (without vision) nor a worker it was handed to
// could look at. So a file is never dropped in silence, whatever the
// model writes.
func unreadNotice(text string, atts []Attachment, vision bool, tasks []Task) string {
	handed := map[int64]bool{}
	for _, t := range tasks {
		for _, id := range t.Attachments {
			handed[id] = true
		}
	}
	lower := strings.ToLower(text)
	var items []string
	for _, a := range atts {
		var why string
		switch {
		case !a.Readable():
			why = cmp.Or(a.Note, "it could not be downloaded")
		case a.Kind == KindImage && !vision && !handed[a.ID]:
			why = "the model cannot see images"
		default:
			continue
		}
		if strings.Contains(lower, strings.ToLower(a.Name)) {
			continue // the reply says something about it already
		}
		items = append(items, fmt.Sprintf("%s (%s): %s", a.Name, FormatSize(a.Size), why))
	}
	if len(items) == 0 {
		return ""
	}
	return "\n\n-# 📎 Not read: " + Truncate(strings.Join(items, " · "), 600)
}

// validText is s as valid UTF-8 without NUL (each bad byte and each NUL
// a U+FFFD): what a model reads of a file, and a file's name before it
// is made unique (the store would make two names that differ only there
// equal).
func validText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
