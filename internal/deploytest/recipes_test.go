package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/callonbot/callon/config"
)

// Workers run the roles' tools, so they read the roles file as the bot
// does: the same directory at the same place.
func TestWorkersReadTheRolesFile(t *testing.T) {
	t.Parallel()
	p := load(t, []string{"workers"}, "docker-compose.yml")
	for _, name := range []string{"callon", "worker"} {
		s := service(t, p, name)
		if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Target == "/etc/callon" && v.ReadOnly && filepath.Base(v.Source) == "deploy"
		}) {
			t.Errorf("%s's volumes = %+v, want ./deploy read-only at /etc/callon", name, s.Volumes)
		}
	}
}

// docker-compose.ollama.yml points the bot and the workers at the host's
// Ollama, which the containers reach as host.docker.internal.
func TestOllamaOverride(t *testing.T) {
	t.Parallel()
	p := load(t, []string{"workers"}, "docker-compose.yml", "docker-compose.ollama.yml")
	for _, name := range []string{"callon", "worker"} {
		s := service(t, p, name)
		if got := s.ExtraHosts["host.docker.internal"]; !slices.Equal(got, []string{"host-gateway"}) {
			t.Errorf("%s's extra_hosts = %v, want host.docker.internal:host-gateway", name, s.ExtraHosts)
		}
		if got := env(s, "OPENAI_BASE_URL"); got != "http://host.docker.internal:11434/v1" {
			t.Errorf("%s's OPENAI_BASE_URL = %q, want Ollama on the host", name, got)
		}
		if env(s, "CALLON_MASTER_MODEL") == "" || env(s, "CALLON_WORKER_MODEL") == "" {
			t.Errorf("%s has no default models for Ollama: %v", name, s.Environment)
		}
		if env(s, "DATABASE_URL") == "" || s.HealthCheck == nil {
			t.Errorf("%s lost the base file's database or health check", name)
		}
	}
	// The configuration callon would read is valid, with no OpenAI key.
	bot := service(t, p, "callon")
	c := config.Load(func(k string) string { return env(bot, k) })
	if err := c.Validate(config.NeedDatabase | config.NeedLLM); err != nil {
		t.Errorf("the Ollama recipe's configuration: %v", err)
	}
}

// docker-compose.mcp.yml builds callon with Node (Dockerfile.node), whose
// binary is where the health check runs it, and mounts the notes.
func TestMCPOverride(t *testing.T) {
	t.Parallel()
	p := load(t, []string{"workers"}, "docker-compose.yml", "docker-compose.mcp.yml")
	binary, entrypoint := nodeImage(t)
	for _, name := range []string{"callon", "worker"} {
		s := service(t, p, name)
		if s.Build == nil || s.Build.Dockerfile != "Dockerfile.node" || s.Build.Args["VERSION"] == nil {
			t.Errorf("%s's build = %+v, want Dockerfile.node with the version arguments", name, s.Build)
		}
		if s.Image == "" || strings.HasPrefix(s.Image, "ghcr.io/") || s.PullPolicy != types.PullPolicyBuild {
			t.Errorf("%s: image %q, pull_policy %q; want a local image name, always built", name, s.Image, s.PullPolicy)
		}
		if hc := s.HealthCheck; hc == nil || len(hc.Test) < 2 || hc.Test[1] != binary {
			t.Errorf("%s's health check = %+v, but Dockerfile.node puts callon at %s", name, hc, binary)
		}
		if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Target == "/srv/notes" && !v.ReadOnly && filepath.Base(v.Source) == "notes"
		}) {
			t.Errorf("%s's volumes = %+v, want ./notes at /srv/notes, writable", name, s.Volumes)
		}
		if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == "/etc/callon" }) {
			t.Errorf("%s's volumes = %+v, want the roles file's directory too", name, s.Volumes)
		}
		// The default roles file is one the image can run: in the mounted
		// directory, its servers started with npx, writing to the notes.
		rf := env(s, "CALLON_ROLES_FILE")
		local := filepath.Join(root, "deploy", strings.TrimPrefix(rf, "/etc/callon/"))
		// With DISCORD_GUILD_ID set, as its comment asks, a bot may run it.
		c := config.Load(func(k string) string {
			return map[string]string{"CALLON_ROLES_FILE": local, "DISCORD_TOKEN": "t", "DISCORD_GUILD_ID": "111111111111111111"}[k]
		})
		if err := c.Validate(config.NeedDiscord); err != nil || !strings.HasPrefix(rf, "/etc/callon/") {
			t.Errorf("%s's CALLON_ROLES_FILE %q (%s): %v", name, rf, local, err)
		}
		if len(c.MCPServers) == 0 || c.MCPServers[0].Command[0] != "npx" || !slices.Contains(c.MCPServers[0].Command, "/srv/notes") {
			t.Errorf("%s's roles file declares %+v, want an npx server on /srv/notes", local, c.MCPServers)
		}
	}
	if entrypoint != binary {
		t.Errorf("Dockerfile.node's ENTRYPOINT runs %s, but the binary is at %s", entrypoint, binary)
	}
}

// nodeImage reads where Dockerfile.node puts the callon binary and what
// its ENTRYPOINT runs.
func nodeImage(t *testing.T) (binary, entrypoint string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile.node"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	if m := regexp.MustCompile(`(?m)^COPY --from=build /out/callon (\S+)$`).FindStringSubmatch(df); m != nil {
		binary = m[1]
	}
	if m := regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"`).FindStringSubmatch(df); m != nil {
		entrypoint = m[1]
	}
	if binary == "" || !strings.Contains(df, "FROM node:") || !strings.Contains(df, "USER node") {
		t.Fatalf("Dockerfile.node: binary %q; want callon copied into a node image, run as the node user", binary)
	}
	return binary, entrypoint
}

// The compose file runs the image of the latest release of CHANGELOG.md,
// by its version (never latest), as the README says.
func TestComposeNamesTheRelease(t *testing.T) {
	t.Parallel()
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md has no release")
	}
	image := "ghcr.io/callonbot/callon:" + string(m[1])
	p := load(t, []string{"workers"}, "docker-compose.yml")
	for _, name := range []string{"callon", "worker"} {
		if s := service(t, p, name); s.Image != image || s.Build == nil {
			t.Errorf("%s's image = %q (build %v), want %s, built when it cannot be pulled", name, s.Image, s.Build != nil, image)
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`"+image+"`") || strings.Contains(string(readme), ":latest") {
		t.Errorf("README.md does not name %s (or names a latest image)", image)
	}
}
