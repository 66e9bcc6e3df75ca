package master

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// What a person approves is what runs: an approval request shows the
// tool's real name as code (never Markdown a model could dress up) and the
// call's arguments in full, pretty-printed, in the message when they fit
// and otherwise attached as a .json file; arguments that could be read
// two ways (a key given twice, of which JSON parsers keep the last) or
// that are not one JSON object are refused before anyone is asked.

// ToolName is a tool's name as people read it, shown as inline code: a
// model's choice of name never renders as Markdown.
func ToolName(name string) string { return CodeSpan(ToolLabel(name)) }

// CheckArgs reports why a call's arguments cannot be shown to a person,
// or made, as written: anything but one JSON object (empty counts as {}),
// or an object that gives a key twice at any depth. Its errors are
// written for the model.
func CheckArgs(args string) error {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return errors.New("the arguments must be one JSON object")
	}
	if err := checkObject(dec, "the arguments"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the arguments must be one JSON object, with nothing after it")
	}
	return nil
}

// checkObject reads the rest of an object whose '{' was read, refusing a
// key given twice.
func checkObject(dec *json.Decoder, where string) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New("the arguments are not valid JSON")
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%s give the key %q twice: give each key once", where, key)
		}
		seen[key] = true
		if err := checkValue(dec, fmt.Sprintf("%q", key)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return errors.New("the arguments are not valid JSON")
	}
	return nil
}

// checkValue reads one value, checking the objects within it.
func checkValue(dec *json.Decoder, where string) error {
	tok, err := dec.Token()
	if err != nil {
		return errors.New("the arguments are not valid JSON")
	}
	switch tok {
	case json.Delim('{'):
		return checkObject(dec, where)
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec, where); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return errors.New("the arguments are not valid JSON")
		}
	}
	return nil
}
