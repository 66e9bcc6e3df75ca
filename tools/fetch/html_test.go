package fetch_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/tools/fetch"
)

func TestHTMLText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, html, want string }{
		{"title and paragraphs", `<html><head><title> A   title </title><style>p{}</style></head>
<body><p>One
   two</p><p>Three &amp; <b>four</b>.</p></body></html>`, "# A title\n\nOne two\n\nThree & four."},
		{"noise dropped", `<body><nav><a href="/">Home</a> | <a href="/b">Blog</a></nav>
<script>alert("x")</script><noscript>Enable JS</noscript><main><h2>News</h2><p>Body</p></main>
<footer>© 2025</footer></body>`, "## News\n\nBody"},
		{"links keep their text", `<p>See <a href="https://example.com/x">the docs</a>, then <a href="/y">more</a>.</p>`,
			"See the docs, then more."},
		{"lists and breaks", `<ul><li>one</li><li>two <i>2</i></li></ul><p>a<br>b</p>`, "- one\n- two 2\n\na\nb"},
		{"table", `<table><tr><th>k</th><th>v</th></tr><tr><td>a</td> <td>1</td></tr></table>`, "k | v\na | 1"},
		{"pre keeps whitespace", "<p>code:</p><pre>if x {\n    y()\n}</pre><p>after</p>", "code:\n\nif x {\n    y()\n}\n\nafter"},
		{"image alt", `<p><img src="a.png" alt="A cat"> sleeps</p>`, "[image: A cat] sleeps"},
		{"inline whitespace", "<p>a<span> b </span>c</p><div>\n\n\n</div><p>d</p>", "a b c\n\nd"},
		{"unclosed", "<p>open <b>bold", "open bold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fetch.HTMLText(strings.NewReader(tc.html)); got != tc.want {
				t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
			}
		})
	}
}
