package fetch

import (
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped elements hold no text a reader wants: code, styling, menus.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Nav: true, atom.Footer: true, atom.Select: true, atom.Button: true, atom.Head: true,
}

// blocks start on a new paragraph.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Aside: true, atom.Blockquote: true, atom.Pre: true, atom.Ul: true,
	atom.Ol: true, atom.Dl: true, atom.Table: true, atom.Form: true, atom.Figure: true,
	atom.Figcaption: true, atom.Address: true, atom.Details: true, atom.Summary: true,
	atom.Fieldset: true, atom.Hr: true, atom.Body: true,
}

// lines start on a new line.
var lines = map[atom.Atom]bool{atom.Br: true, atom.Tr: true, atom.Dt: true, atom.Dd: true, atom.Li: true}

// HTMLText turns an HTML document into readable text: the title, then the
// body's text with headings marked as in Markdown, paragraphs separated
// by a blank line, list items and table rows on their own lines, link text
// kept, and scripts, styles, navigation and footers left out. Whitespace
// is collapsed except inside <pre>.
func HTMLText(r io.Reader) string {
	var (
		w     textWriter
		title strings.Builder
		skip  int // depth inside skipped elements
		pre   int // depth inside <pre>
		inTtl bool
	)
	z := html.NewTokenizer(r)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			out := w.String()
			if t := strings.Join(strings.Fields(title.String()), " "); t != "" {
				out = strings.TrimSpace("# " + t + "\n\n" + out)
			}
			return out
		case html.TextToken:
			switch {
			case inTtl:
				title.Write(z.Text())
			case skip > 0:
			case pre > 0:
				w.raw(string(z.Text()))
			default:
				w.text(string(z.Text()))
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			start := tt != html.EndTagToken
			selfClosing := tt == html.SelfClosingTagToken || isVoid(a)
			switch {
			case a == atom.Title:
				inTtl = start && !selfClosing
				continue
			case skipped[a]:
				if !selfClosing {
					skip = adjust(skip, start)
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case a == atom.Pre && !selfClosing:
				pre = adjust(pre, start)
				w.breakLines(2)
			case headingLevel(a) > 0:
				w.breakLines(2)
				if start {
					w.raw(strings.Repeat("#", headingLevel(a)) + " ")
				}
			case blocks[a]:
				w.breakLines(2)
			case a == atom.Li && start:
				w.breakLines(1)
				w.raw("- ")
			case lines[a]:
				w.breakLines(1)
			case (a == atom.Td || a == atom.Th) && start:
				w.cell()
			case a == atom.Img && start:
				if alt := attr(z, "alt"); strings.TrimSpace(alt) != "" {
					w.text("[image: " + strings.TrimSpace(alt) + "]")
				}
			}
		}
	}
}

func adjust(depth int, start bool) int {
	if start {
		return depth + 1
	}
	return max(depth-1, 0)
}

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// isVoid says whether an element never has content, so it has no end tag.
func isVoid(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img, atom.Input,
		atom.Link, atom.Meta, atom.Source, atom.Track, atom.Wbr:
		return true
	}
	return false
}

func attr(z *html.Tokenizer, name string) string {
	for {
		k, v, more := z.TagAttr()
		if string(k) == name {
			return string(v)
		}
		if !more {
			return ""
		}
	}
}

// textWriter builds text with collapsed whitespace and at most one blank
// line between paragraphs.
type textWriter struct {
	b       strings.Builder
	newline int  // newlines owed before the next text
	space   bool // a space is owed before the next text
	rowText bool // the current line has text, so a cell needs a separator
}

func (w *textWriter) text(s string) {
	lead := s != "" && isSpace(s[0])
	trail := s != "" && isSpace(s[len(s)-1])
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		w.space = w.space || lead || trail
		return
	}
	if lead {
		w.space = true
	}
	w.raw(s)
	w.space = trail
}

// raw writes s as it is, after any line breaks or space owed.
func (w *textWriter) raw(s string) {
	if s == "" {
		return
	}
	if w.b.Len() > 0 {
		switch {
		case w.newline > 0:
			w.b.WriteString(strings.Repeat("\n", w.newline))
			w.rowText = false
		case w.space:
			w.b.WriteByte(' ')
		}
	}
	w.newline, w.space = 0, false
	w.b.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		w.rowText = strings.TrimSpace(s[i+1:]) != ""
	} else {
		w.rowText = true
	}
}

// breakLines owes n line breaks (1: a new line, 2: a new paragraph).
func (w *textWriter) breakLines(n int) {
	w.newline = max(w.newline, n)
	w.space = false
}

// cell separates a table cell from the previous one on its row.
func (w *textWriter) cell() {
	if w.newline == 0 && w.rowText {
		w.space = true
		w.raw("|")
		w.space = true
	}
}

func (w *textWriter) String() string {
	out := w.b.String()
	ls := strings.Split(out, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(ls, "\n"))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
