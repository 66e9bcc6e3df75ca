package config

import (
	"errors"
	"net/url"
	"strings"
)

// masked replaces a password wherever a connection string is shown.
const masked = "xxxxx"

// secretKeys are the connection parameters whose values are secrets:
// pgx accepts both, in the URL's query and in the keyword/value form.
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// RedactURL returns a database connection string with its passwords
// masked, in every form pgx accepts: a postgres:// (or postgresql://) URL,
// whose userinfo password and password and sslpassword query parameters
// are masked, or a keyword/value string (host=… password=…), whose
// password and sslpassword values are masked, quoted or not. Nothing else
// changes: a user or database name that equals the password stays. A
// keyword/value string that does not parse is replaced whole, since its
// password cannot be told apart.
func RedactURL(dsn string) string {
	if dsn == "" {
		return ""
	}
	if isURLForm(dsn) {
		return redactURLForm(dsn)
	}
	out, err := redactKeywordForm(dsn)
	if err != nil {
		return "(unparseable, redacted)"
	}
	return out
}

func isURLForm(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redactURLForm masks the userinfo password (everything after the first
// ':' before the '@' that ends the authority) and secret query values. It
// works on the text rather than url.Parse, which refuses the multi-host
// URLs pgx accepts.
func redactURLForm(dsn string) string {
	scheme, rest, _ := strings.Cut(dsn, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if user, _, ok := strings.Cut(authority[:at], ":"); ok {
			authority = user + ":" + masked + authority[at:]
		}
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if !hasQuery {
		return scheme + "://" + authority + tail
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if secretKeys[strings.ToLower(k)] {
			pairs[i] = p[:strings.Index(p, "=")+1] + masked
		}
	}
	out := scheme + "://" + authority + path + "?" + strings.Join(pairs, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// errKeywordForm is a keyword/value connection string that does not
// parse.
var errKeywordForm = errors.New("not a key=value connection string")

// redactKeywordForm masks the values of secret keys in a libpq
// keyword/value string: keys and values separated by '=' (spaces around it
// allowed), a value either quoted with single quotes (\' and \\ escaped)
// or running to the next space (backslash escaping any character).
func redactKeywordForm(s string) (string, error) {
	var b strings.Builder
	i, pairs := 0, 0
	for {
		start := i
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		b.WriteString(s[start:i])
		if i == len(s) {
			break
		}
		keyStart := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[keyStart:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if key == "" || i == len(s) || s[i] != '=' {
			return "", errKeywordForm
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		b.WriteString(s[keyStart:i])
		valueStart := i
		if i < len(s) && s[i] == '\'' {
			i++
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return "", errKeywordForm // an unterminated quote
			}
			i++
		} else {
			for ; i < len(s) && !isSpace(s[i]); i++ {
				if s[i] == '\\' {
					i++
				}
			}
			i = min(i, len(s))
		}
		if secretKeys[strings.ToLower(key)] {
			b.WriteString(masked)
		} else {
			b.WriteString(s[valueStart:i])
		}
		pairs++
	}
	if pairs == 0 {
		return "", errKeywordForm
	}
	return b.String(), nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// checkDSN reports whether a connection string has a form pgx accepts:
// a postgres:// URL (pgx checks the rest when it connects), or a
// keyword/value string.
func checkDSN(dsn string) bool {
	if isURLForm(dsn) {
		return true
	}
	if strings.Contains(dsn, "://") {
		return false
	}
	_, err := redactKeywordForm(dsn)
	return err == nil
}
