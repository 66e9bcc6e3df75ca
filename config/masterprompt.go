package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// MaxMasterPrompt bounds the master's instructions read from
// CALLON_MASTER_PROMPT_FILE, in bytes.
const MaxMasterPrompt = 16 << 10

// ReadMasterPrompt reads the master's instructions from a file: what
// replaces callon's own "How you work" section of the master's system
// prompt (the goal, the team, the limits and the history stay callon's).
// CALLON_MASTER_PROMPT_FILE names it; callon eval and callon replay take
// one with --prompt-file.
func ReadMasterPrompt(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxMasterPrompt+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	switch text := strings.TrimSpace(string(data)); {
	case len(data) > MaxMasterPrompt:
		return "", fmt.Errorf("%s is larger than %d bytes", path, MaxMasterPrompt)
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return "", fmt.Errorf("%s is not UTF-8 text", path)
	case text == "":
		return "", fmt.Errorf("%s is empty", path)
	default:
		return text, nil
	}
}
