package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The core decides and the adapters speak: what master knows of Discord
// (message length and splitting, snowflakes, permission bits, button
// styles, the CDN) sits in master/discord.go, and the models' prompts
// name the platform in master/prompt.go. Rendering for Discord is
// bot/render's, talking to it bot's. "Discord" may appear in at most
// three files of master.
func TestDiscordAppearsInAtMostThreeCoreFiles(t *testing.T) {
	t.Parallel()
	var files []string
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/master" {
			continue
		}
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "Discord") {
				files = append(files, f)
			}
		}
		if len(p.GoFiles) < 10 {
			t.Fatalf("master has only %d files: go list found the wrong package", len(p.GoFiles))
		}
	}
	if len(files) > 3 {
		t.Errorf("\"Discord\" appears in %d files of master, want at most 3 (discord.go, prompt.go): %s", len(files), strings.Join(files, ", "))
	}
}
