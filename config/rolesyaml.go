package config

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong in the roles file, at its line (0 when the
// file as a whole is wrong), in the file's own words.
type Problem struct {
	Line int
	Text string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Text
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Text)
}

// RolesFileError is every problem of a roles file, in the order of its
// lines.
type RolesFileError struct {
	Path     string // "" when the file is not one on disk
	Problems []Problem
}

func (e *RolesFileError) Error() string {
	ps := slices.Clone(e.Problems)
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	text := strings.Join(lines, "\n")
	if len(ps) > 1 {
		text = fmt.Sprintf("%d problems:\n%s", len(ps), text)
	}
	if e.Path != "" {
		text = e.Path + ": " + text
	}
	return text
}

// The roles file's shapes are Go structs whose yaml tags are the file's
// keys: a key added to a struct is known to the decoder, and its errors
// name it, at once. A struct may keep where it starts in the file in a
// field `Line int` tagged `yaml:"-"`.

// nouns name each shape of the file in errors, never by its Go name.
var nouns = map[reflect.Type]string{
	reflect.TypeFor[rolesFileYAML](): "the roles file",
	reflect.TypeFor[roleYAML]():      "a role",
	reflect.TypeFor[guildYAML]():     "a guild",
	reflect.TypeFor[channelYAML]():   "a channel",
	reflect.TypeFor[mcpServerYAML](): "an MCP server",
	reflect.TypeFor[providerYAML]():  "a provider",
}

func noun(t reflect.Type) string {
	if n, ok := nouns[t]; ok {
		return n
	}
	return "this entry"
}

// decoder reads a YAML node into the file's shapes strictly, keeping
// every problem it meets instead of stopping at the first.
type decoder struct {
	problems []Problem
}

func (d *decoder) addf(line int, path, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if path != "" {
		text = path + ": " + text
	}
	d.problems = append(d.problems, Problem{Line: line, Text: text})
}

// child is the path of a key under path, as the file writes it.
func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// decode reads n into v, which it may set; path names n for errors.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n == nil {
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // key: with nothing: the default
	}
	if reflect.PointerTo(v.Type()).Implements(unmarshaler) {
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.addf(n.Line, path, "%s", yamlMessage(err))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(n, elem.Elem(), path)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.addf(n.Line, path, "want keys and values (key: value), got %s", describe(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		d.eachKey(n, path, func(key, val *yaml.Node) {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, elem, child(path, key.Value))
			if elem.Kind() == reflect.Struct {
				setLine(elem, key.Line)
			}
			v.SetMapIndex(reflect.ValueOf(key.Value), elem)
		})
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.addf(n.Line, path, "want a list ([a, b], or one \"- \" line each), got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i+1))
		}
		v.Set(s)
	default:
		d.decodeScalar(n, v, path)
	}
}

// decodeStruct reads a mapping into a struct by its yaml tags, naming
// every unknown key and suggesting the key meant.
func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	keys, fields := structKeys(t)
	if n.Kind != yaml.MappingNode {
		d.addf(n.Line, path, "want %s (keys such as %s), got %s", noun(t), strings.Join(keys, ", "), describe(n))
		return
	}
	setLine(v, n.Line)
	d.eachKey(n, path, func(key, val *yaml.Node) {
		i, ok := fields[key.Value]
		if !ok {
			d.addf(key.Line, path, "unknown key %q%s: %s takes %s", key.Value, didYouMean(key.Value, keys), noun(t), strings.Join(keys, ", "))
			return
		}
		d.decode(val, v.Field(i), child(path, key.Value))
	})
}

// eachKey calls f for each key of a mapping, refusing keys that are not
// text and keys given twice.
func (d *decoder) eachKey(n *yaml.Node, path string, f func(key, val *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.addf(key.Line, path, "a key must be a plain name, got %s", describe(key))
			continue
		}
		if first, dup := seen[key.Value]; dup {
			d.addf(key.Line, path, "key %q is given twice (first at line %d)", key.Value, first)
			continue
		}
		seen[key.Value] = key.Line
		f(key, val)
	}
}

// decodeScalar reads a text, number or yes/no value.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.addf(n.Line, path, "want %s, got %s", scalarWords(v.Kind()), describe(n))
		return
	}
	s := n.Value
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
		return
	case reflect.Int, reflect.Int64, reflect.Int32:
		if i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil && !v.OverflowInt(i) {
			v.SetInt(i)
			return
		}
	case reflect.Float32, reflect.Float64:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			v.SetFloat(f)
			return
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(s); err == nil {
			v.SetBool(b)
			return
		}
	}
	d.addf(n.Line, path, "want %s, got %q", scalarWords(v.Kind()), s)
}

// structKeys lists a struct's yaml keys in declaration order, and the
// field of each.
func structKeys(t reflect.Type) ([]string, map[string]int) {
	var keys []string
	fields := map[string]int{}
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		keys = append(keys, tag)
		fields[tag] = i
	}
	return keys, fields
}

// setLine records line in v's `Line int` field tagged `yaml:"-"`, if any.
func setLine(v reflect.Value, line int) {
	f, ok := v.Type().FieldByName("Line")
	if ok && f.Tag.Get("yaml") == "-" && f.Type.Kind() == reflect.Int {
		v.FieldByIndex(f.Index).SetInt(int64(line))
	}
}

// describe names what a node is, for "want …, got …".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "keys and values"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func scalarWords(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "text"
}

// didYouMean suggests the known key closest to a misspelt one.
func didYouMean(key string, known []string) string {
	best, dist := "", 3 // suggest only within two edits
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): `)

// yamlError is a syntax error of the YAML library as a Problem: its line,
// and its message without the library's prefix.
func yamlError(err error) Problem {
	msg := strings.TrimSpace(err.Error())
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Text: "not valid YAML: " + msg[len(m[0]):]}
	}
	return Problem{Text: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// yamlMessage is the message of an error of a custom UnmarshalYAML,
// without a "line N: " of its own (the Problem has the line).
func yamlMessage(err error) string {
	msg := strings.TrimSpace(err.Error())
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return msg[len(m[0]):]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}
