package discordfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// knownLocale reports whether l is one of Discord's locales, which key
// name_localizations and description_localizations and which users and
// guilds have.
func knownLocale(l string) bool {
	switch l {
	case "id", "da", "de", "en-GB", "en-US", "es-ES", "es-419", "fr", "hr", "it", "lt", "hu", "nl", "no",
		"pl", "pt-BR", "ro", "fi", "sv-SE", "vi", "tr", "cs", "el", "bg", "ru", "uk", "hi", "th",
		"zh-CN", "ja", "zh-TW", "ko":
		return true
	}
	return false
}

// checkLocales checks the locales a test gives an interaction; "" is the
// default.
func checkLocales(locales ...string) error {
	for _, l := range locales {
		if l != "" && !knownLocale(l) {
			return fmt.Errorf("%q is not one of Discord's locales", l)
		}
	}
	return nil
}

// localizations is a name_localizations or description_localizations
// map; null or absent is none.
type localizations map[string]string

// check validates the keys as locales and each value with valid, which
// reports a problem with a value as an error at the given path.
func (ls localizations) check(valid func(v string, path ...string) *apiError, path ...string) *apiError {
	for _, l := range slices.Sorted(maps.Keys(ls)) {
		at := append(append([]string(nil), path...), l)
		if !knownLocale(l) {
			return formError("ENUM_TYPE_COERCE", fmt.Sprintf("Value %q is not a valid enum value.", l), at...)
		}
		if e := valid(ls[l], at...); e != nil {
			return e
		}
	}
	return nil
}

// localized are the localization maps of a command or an option.
type localized struct {
	NameLocalizations        localizations `json:"name_localizations"`
	DescriptionLocalizations localizations `json:"description_localizations"`
}

// check validates both maps: names with checkName (chat input) or
// contextName, descriptions with checkDescription.
func (l *localized) check(checkName func(string, ...string) *apiError, path ...string) *apiError {
	if e := l.NameLocalizations.check(checkName, append(path, "name_localizations")...); e != nil {
		return e
	}
	return l.DescriptionLocalizations.check(checkDescription, append(path, "description_localizations")...)
}

// contextName checks the name of a user or message command: 1 to 32
// characters of any kind.
func contextName(name string, path ...string) *apiError {
	if n := utf8.RuneCountInString(name); n < 1 || n > 32 {
		return formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.", path...)
	}
	return nil
}

// checkChoices validates option choices: 1 to 100 character names, in
// their localizations too.
func checkChoices(raws []json.RawMessage, path ...string) *apiError {
	for i, raw := range raws {
		at := append(append([]string(nil), path...), strconv.Itoa(i))
		var c struct {
			Name              string        `json:"name"`
			NameLocalizations localizations `json:"name_localizations"`
		}
		if json.Unmarshal(raw, &c) != nil {
			return formError("MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType", at...)
		}
		if e := choiceName(c.Name, append(at, "name")...); e != nil {
			return e
		}
		if e := c.NameLocalizations.check(choiceName, append(at, "name_localizations")...); e != nil {
			return e
		}
	}
	return nil
}

func choiceName(name string, path ...string) *apiError {
	if n := utf8.RuneCountInString(name); n < 1 || n > 100 {
		return formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", path...)
	}
	return nil
}
