package bot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"
	"strings"

	"github.com/callonbot/callon/master"
)

// Avatars picks the picture a member posts under. A role the roles file
// gives an avatar: URL keeps it. Otherwise, with Base (CALLON_PUBLIC_URL:
// where Discord can reach callon's HTTP server), an image callon draws
// for the role, deterministic, served at Base/avatars/<key>.png (Discord
// fetches it and caches it); without Base, one of Discord's own default
// avatars, picked by the role's name, so a member keeps its picture.
type Avatars struct {
	Base string
}

// AvatarKey names a role's drawn picture: a hash of its name, so the URL
// says nothing of the role, and the picture is the same wherever callon
// runs.
func AvatarKey(role string) string {
	sum := sha256.Sum256([]byte("callon-persona/" + role))
	return hex.EncodeToString(sum[:8])
}

// URL is the avatar_url of a persona's messages.
func (a Avatars) URL(p *master.Persona) string {
	switch {
	case p.Avatar != "":
		return p.Avatar
	case a.Base != "":
		return strings.TrimRight(a.Base, "/") + "/avatars/" + AvatarKey(p.Role) + ".png"
	}
	sum := sha256.Sum256([]byte(p.Role))
	return "https://cdn.discordapp.com/embed/avatars/" + strconv.Itoa(int(sum[0])%6) + ".png"
}

// avatarSize is the drawn picture's side in pixels: a 5×5 grid of 16 px
// cells with a 8 px margin.
const avatarSize = 96

// AvatarPNG draws the picture of a key: a symmetric 5×5 pattern in one
// color on a light background, both from the key's bytes. ok is false for
// a key AvatarKey could not have made.
func AvatarPNG(key string) (data []byte, ok bool) {
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != 8 {
		return nil, false
	}
	fg := hueColor(b[0], b[1])
	bg := color.RGBA{0xf2, 0xf3, 0xf5, 0xff}
	img := image.NewRGBA(image.Rect(0, 0, avatarSize, avatarSize))
	for i := range img.Pix {
		img.Pix[i] = []uint8{bg.R, bg.G, bg.B, bg.A}[i%4]
	}
	bits := uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(b[4])
	for row := range 5 {
		for col := range 3 { // the other two columns mirror the first two
			if bits&(1<<(row*3+col)) == 0 {
				continue
			}
			for _, c := range []int{col, 4 - col} {
				for y := 8 + row*16; y < 8+(row+1)*16; y++ {
					for x := 8 + c*16; x < 8+(c+1)*16; x++ {
						img.SetRGBA(x, y, fg)
					}
				}
			}
		}
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return nil, false
	}
	return out.Bytes(), true
}

// hueColor is a saturated color of the hue h (0–255 around the wheel),
// darker or lighter by v.
func hueColor(h, v byte) color.RGBA {
	f := float64(h) / 256 * 6
	x := f - float64(int(f))
	lo, hi := 0.25, 0.75+float64(v%32)/256
	mid := lo + (hi-lo)*x
	var r, g, b float64
	switch int(f) {
	case 0:
		r, g, b = hi, mid, lo
	case 1:
		r, g, b = hi-(mid-lo), hi, lo
	case 2:
		r, g, b = lo, hi, mid
	case 3:
		r, g, b = lo, hi-(mid-lo), hi
	case 4:
		r, g, b = mid, lo, hi
	default:
		r, g, b = hi, lo, hi-(mid-lo)
	}
	return color.RGBA{uint8(r * 255), uint8(g * 255), uint8(b * 255), 0xff}
}

// AvatarHandler serves the drawn pictures: GET /avatars/<key>.png. A key
// is 16 hex characters (anything else is 404) and its picture never
// changes, so it is cached for a year.
func AvatarHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutSuffix(r.PathValue("file"), ".png")
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		data, drawn := AvatarPNG(key) // drawn only for a request that may have it
		if !drawn {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	})
}
