#!/usr/bin/env bash
# Prints a DATABASE_URL that reaches a running Postgres, for `make test`.
# Uses $DATABASE_URL (or the local default) when it answers; otherwise starts
# the docker compose Postgres if Docker can; otherwise fails with instructions.
set -euo pipefail

default_url="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
compose_url="postgres://callon:${POSTGRES_PASSWORD:-callon}@127.0.0.1:${POSTGRES_PORT:-5432}/callon?sslmode=disable"
url="${DATABASE_URL:-$default_url}"

reachable() {
	# host and port of a postgres:// URL; the defaults are libpq's.
	local rest hostport host port
	rest="${1#*://}"
	rest="${rest#*@}"
	hostport="${rest%%[/?]*}"
	host="${hostport%%:*}"
	port="${hostport##*:}"
	[ "$port" = "$hostport" ] && port=5432
	[ -n "$host" ] || host=127.0.0.1
	timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

if reachable "$url"; then
	echo "$url"
	exit 0
fi

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
	echo "Postgres is not reachable at DATABASE_URL; starting the docker compose Postgres" >&2
	# docker-compose.dev.yml publishes it on 127.0.0.1:${POSTGRES_PORT:-5432}.
	docker compose -f docker-compose.yml -f docker-compose.dev.yml up -d --wait postgres >&2
	echo "$compose_url"
	exit 0
fi

cat >&2 <<MSG
Postgres is not reachable, and Docker cannot start one here.
The tests need a real PostgreSQL (they never skip). Either:
  - start a local server, e.g. on Debian:
      pg_ctlcluster --skip-systemctl-redirect \$(ls /etc/postgresql) main start
  - or run one with Docker:
      docker compose -f docker-compose.yml -f docker-compose.dev.yml up -d postgres
  - or point DATABASE_URL at one (the user must be allowed to create databases).
MSG
exit 1
