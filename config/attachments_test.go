package config_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestAttachmentsDefaults(t *testing.T) {
	t.Parallel()
	a := config.Load(env(nil)).Attachments
	if a.MaxFile != 8<<20 || a.MaxMessage != 16<<20 || len(a.VisionModels) != 0 {
		t.Errorf("Attachments = %+v, want 8 MB per file, 16 MB per message, no vision models", a)
	}
	if want := []string{"https://cdn.discordapp.com", "https://media.discordapp.net"}; !slices.Equal(a.CDN(), want) {
		t.Errorf("CDN() = %v, want %v", a.CDN(), want)
	}
}

func TestAttachmentsParse(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"DISCORD_CDN_URL":               "http://127.0.0.1:4000/cdn/",
		"CALLON_ATTACHMENT_MAX_FILE":    "512KB",
		"CALLON_ATTACHMENT_MAX_MESSAGE": "2 MiB",
		"CALLON_VISION_MODELS":          " gpt-4o, local/llava ,gpt-4o",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	a := c.Attachments
	if !slices.Equal(a.CDN(), []string{"http://127.0.0.1:4000/cdn"}) || a.MaxFile != 512<<10 || a.MaxMessage != 2<<20 {
		t.Errorf("Attachments = %+v (CDN %v)", a, a.CDN())
	}
	if !a.Vision("gpt-4o") || !a.Vision("local/llava") || a.Vision("gpt-4o-mini") || len(a.VisionModels) != 2 {
		t.Errorf("VisionModels = %v", a.VisionModels)
	}
	if n := config.Load(env(map[string]string{"CALLON_ATTACHMENT_MAX_FILE": "4096"})).Attachments.MaxFile; n != 4096 {
		t.Errorf("a plain number is %d bytes, want 4096", n)
	}
}

func TestAttachmentsErrors(t *testing.T) {
	t.Parallel()
	for v, value := range map[string]string{
		"DISCORD_CDN_URL":               "cdn.discordapp.com",
		"CALLON_ATTACHMENT_MAX_FILE":    "100MB",
		"CALLON_ATTACHMENT_MAX_MESSAGE": "lots",
	} {
		err := config.Load(env(map[string]string{v: value})).Validate(0)
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Var != v {
			t.Errorf("%s=%q: Validate = %v, want an error naming it", v, value, err)
		}
	}
}
