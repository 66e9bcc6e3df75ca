package bot

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
)

func TestAvatars(t *testing.T) {
	t.Parallel()
	r := &master.Persona{Role: "researcher"}
	if got := (Avatars{}).URL(r); got != (Avatars{}).URL(&master.Persona{Role: "researcher"}) ||
		!strings.HasPrefix(got, "https://cdn.discordapp.com/embed/avatars/") {
		t.Errorf("default avatar = %q, want one of Discord's, the same every time", got)
	}
	if got := (Avatars{Base: "https://callon.example.com/"}).URL(r); got != "https://callon.example.com/avatars/"+AvatarKey("researcher")+".png" {
		t.Errorf("drawn avatar URL = %q", got)
	}
	if got := (Avatars{Base: "https://x"}).URL(&master.Persona{Role: "r", Avatar: "https://example.com/a.png"}); got != "https://example.com/a.png" {
		t.Errorf("the roles file's avatar is not kept: %q", got)
	}
	if AvatarKey("researcher") == AvatarKey("writer") || len(AvatarKey("x")) != 16 {
		t.Error("keys are not a 16-character hash per role")
	}

	mux := http.NewServeMux()
	mux.Handle("GET /avatars/{file}", AvatarHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp, b.Bytes()
	}
	resp, body := get("/avatars/" + AvatarKey("researcher") + ".png")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET avatar: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil || img.Bounds().Dx() != avatarSize {
		t.Fatalf("the avatar is not a %d px PNG: %v", avatarSize, err)
	}
	_, again := get("/avatars/" + AvatarKey("researcher") + ".png")
	_, other := get("/avatars/" + AvatarKey("writer") + ".png")
	if !bytes.Equal(body, again) || bytes.Equal(body, other) {
		t.Error("a role's picture is not its own, the same every time")
	}
	for _, bad := range []string{"/avatars/zz.png", "/avatars/" + AvatarKey("x"), "/avatars/" + strings.Repeat("a", 64) + ".png"} {
		if resp, _ := get(bad); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", bad, resp.StatusCode)
		}
	}
}
