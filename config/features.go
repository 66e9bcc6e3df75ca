package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Features is what one scope of the roles file says about its teams'
// features (personas, memory, review): a nil field says nothing, leaving
// it to the next scope (a channel's to its guild's, a guild's to the
// file's top level, that to callon's default: memory on, the rest off).
type Features struct {
	GuildID   string // "" for the file's top level
	ChannelID string // "" for a guild's
	Personas  *bool
	Memory    *bool
	Review    string // "", "off", "on" or "always"
}

// featuresYAML are the feature keys a scope of the roles file may give
// (its top level, a guild, a channel), beside its roles:
//
//	personas: on     # members speak in their own names (off by default)
//	memory: off      # the channel's notes (on by default)
//	review: on       # a reviewer checks merged replies; always: every reply
type featuresYAML struct {
	Personas, Memory, Review *string
}

// featuresKey is the first feature key given, to find its line.
func featuresKey(y featuresYAML) string {
	switch {
	case y.Personas != nil:
		return FeaturePersonasKey
	case y.Memory != nil:
		return FeatureMemoryKey
	}
	return FeatureReviewKey
}

// set reports whether any feature key is given.
func (y featuresYAML) set() bool { return y.Personas != nil || y.Memory != nil || y.Review != nil }

// features reads the scope's feature keys; its errors name the key.
func (y featuresYAML) features(guildID, channelID string) (Features, error) {
	f := Features{GuildID: guildID, ChannelID: channelID}
	var err error
	if f.Personas, err = onOff(FeaturePersonasKey, y.Personas); err != nil {
		return f, err
	}
	if f.Memory, err = onOff(FeatureMemoryKey, y.Memory); err != nil {
		return f, err
	}
	if y.Review != nil {
		switch v := strings.ToLower(strings.TrimSpace(*y.Review)); v {
		case "off", "false", "no":
			f.Review = "off"
		case "on", "true", "yes":
			f.Review = "on"
		case "always":
			f.Review = "always"
		default:
			return f, fmt.Errorf("review: %q is not one of on, off, always", *y.Review)
		}
	}
	return f, nil
}

// Feature keys of the roles file.
const (
	FeaturePersonasKey = "personas"
	FeatureMemoryKey   = "memory"
	FeatureReviewKey   = "review"
)

func onOff(key string, v *string) (*bool, error) {
	if v == nil {
		return nil, nil
	}
	var b bool
	switch strings.ToLower(strings.TrimSpace(*v)) {
	case "on", "true", "yes":
		b = true
	case "off", "false", "no":
	default:
		return nil, fmt.Errorf("%s: %q is neither on nor off", key, *v)
	}
	return &b, nil
}

// avatarURL checks a role's avatar: an https URL Discord can fetch.
func avatarURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || len(s) > 512 {
		return "", fmt.Errorf("avatar %q is not an https URL (Discord fetches it; at most 512 characters)", s)
	}
	return s, nil
}
