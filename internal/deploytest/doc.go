// Package deploytest checks, in its tests, the container files at the
// repository's root: docker-compose.yml and its overrides (dev, ollama,
// mcp with Dockerfile.node) load and validate as `docker compose config`
// does (with compose-go, the compose CLI's own loader, so no Docker is
// needed), and the Dockerfiles and .dockerignore keep the hygiene
// docs/operating.md promises.
package deploytest
