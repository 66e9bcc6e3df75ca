// Package deploytest checks, in its tests, the container files at the
// repository's root: docker-compose.yml and docker-compose.dev.yml load
// and validate as `docker compose config` does (with compose-go, the
// compose CLI's own loader, so no Docker is needed), and the Dockerfile
// and .dockerignore keep the hygiene docs/operating.md promises.
package deploytest
