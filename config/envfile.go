package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// DefaultEnvFile is the file of variables read from the working
// directory when it exists (CALLON_ENV_FILE names another; "-" none).
const DefaultEnvFile = ".env"

// WithEnvFile returns getenv extended with the variables of the env file:
// a variable set in the environment wins over the file. The file is
// .env in the working directory when it exists, or the one
// CALLON_ENV_FILE names (which must exist), or none when that is "-".
// Its errors name the file and line.
func WithEnvFile(getenv func(string) string) (func(string) string, error) {
	path := strings.TrimSpace(getenv("CALLON_ENV_FILE"))
	switch path {
	case "-":
		return getenv, nil
	case "":
		path = DefaultEnvFile
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && path == DefaultEnvFile {
		return getenv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("CALLON_ENV_FILE: cannot read %s: %w", path, errors.Unwrap(err))
	}
	vars, err := parseEnvFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return vars[k]
	}, nil
}

// parseEnvFile reads KEY=VALUE lines as docker compose and most tools
// write them: blank lines and # comments are skipped, "export " is
// allowed, a value may be 'single' (as is) or "double" quoted (with Go
// escapes such as \n), and an unquoted value ends at " #".
func parseEnvFile(data []byte) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t\"'") {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.HasPrefix(value, `"`):
			v, err := strconv.Unquote(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: unterminated or malformed double-quoted value", n, key)
			}
			value = v
		case strings.HasPrefix(value, "'"):
			if len(value) < 2 || !strings.HasSuffix(value, "'") {
				return nil, fmt.Errorf("line %d: %s: unterminated single-quoted value", n, key)
			}
			value = value[1 : len(value)-1]
		default:
			if i := strings.Index(value, " #"); i >= 0 {
				value = strings.TrimSpace(value[:i])
			}
		}
		vars[key] = value
	}
	return vars, sc.Err()
}
