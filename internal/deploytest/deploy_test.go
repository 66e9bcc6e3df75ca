package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/callonbot/callon/config"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// load loads compose files as `docker compose [-f …] config` does, with
// profiles active and an environment of its own (never the test's).
func load(t *testing.T, profiles []string, files ...string) *types.Project {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(root, f))
	}
	opts, err := cli.NewProjectOptions(paths,
		cli.WithWorkingDirectory(root),
		cli.WithEnv([]string{"POSTGRES_PASSWORD=pw"}),
		cli.WithProfiles(profiles),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("docker compose config %v: %v", files, err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func env(s types.ServiceConfig, k string) string {
	if v := s.Environment[k]; v != nil {
		return *v
	}
	return ""
}

func TestComposeFileIsValid(t *testing.T) {
	t.Parallel()
	p := load(t, nil, "docker-compose.yml")
	if p.Name != "callon" {
		t.Errorf("project name = %q, want callon", p.Name)
	}
	if pg := service(t, p, "postgres"); len(pg.Ports) != 0 {
		t.Errorf("postgres publishes %+v on the host by default; want nothing published", pg.Ports)
	}
	bot := service(t, p, "callon")
	if got := env(bot, "CALLON_HTTP_ADDR"); got != ":8080" {
		t.Errorf("callon's CALLON_HTTP_ADDR = %q, want :8080", got)
	}
	if got := env(bot, "DATABASE_URL"); !strings.Contains(got, "callon:pw@postgres:5432") {
		t.Errorf("callon's DATABASE_URL = %q, want the compose Postgres with POSTGRES_PASSWORD", got)
	}
	if hc := bot.HealthCheck; hc == nil || !slices.Equal([]string(hc.Test), []string{"CMD", "/callon", "healthcheck"}) {
		t.Errorf("callon's health check = %+v, want callon healthcheck", hc)
	}
	roles := slices.IndexFunc(bot.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Target == "/etc/callon" })
	if roles < 0 || !bot.Volumes[roles].ReadOnly || bot.Volumes[roles].Type != types.VolumeTypeBind {
		t.Errorf("callon's volumes = %+v, want ./deploy bound read-only at /etc/callon for the roles file", bot.Volumes)
	}
	if b := bot.Build; b == nil || b.Args["VERSION"] == nil || b.Args["REVISION"] == nil {
		t.Errorf("callon's build = %+v, want the VERSION and REVISION arguments", b)
	}
	if _, err := p.GetService("worker"); err == nil {
		t.Error("the worker service runs without its profile")
	}

	p = load(t, []string{"workers"}, "docker-compose.yml")
	w := service(t, p, "worker")
	if !slices.Equal([]string(w.Command), []string{"worker"}) || w.HealthCheck == nil || env(w, "CALLON_HTTP_ADDR") != ":8080" {
		t.Errorf("worker = command %v, health check %+v; want callon worker with its health check", w.Command, w.HealthCheck)
	}
}

func TestDevFilePublishesPostgresOnLoopback(t *testing.T) {
	t.Parallel()
	p := load(t, nil, "docker-compose.yml", "docker-compose.dev.yml")
	ports := service(t, p, "postgres").Ports
	if len(ports) != 1 || ports[0].HostIP != "127.0.0.1" || ports[0].Published != "5432" || ports[0].Target != 5432 {
		t.Errorf("postgres ports with the dev file = %+v, want 127.0.0.1:5432:5432", ports)
	}
}

func TestDockerignoreKeepsSecretsAndHistoryOut(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, want := range []string{".env", ".env.*", ".git"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %q", want)
		}
	}
}

func TestDockerfileStampsTheVersionAndCachesBuilds(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{
		"ARG VERSION", "ARG REVISION",
		"-X main.version=${VERSION}", "-X main.revision=${REVISION}",
		"--mount=type=cache,target=/go/pkg/mod", "--mount=type=cache,target=/root/.cache/go-build",
		"USER nonroot",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

// The example roles file the compose volume documents is a valid one.
func TestExampleRolesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(root, "deploy", "roles.example.yaml")
	c := config.Load(func(k string) string {
		if k == "CALLON_ROLES_FILE" {
			return path
		}
		return ""
	})
	if err := c.Validate(0); err != nil || len(c.Roles) == 0 {
		t.Errorf("%s: %v, %d rosters; want a valid file with a roster", path, err, len(c.Roles))
	}
}
