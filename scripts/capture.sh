#!/bin/sh
# Renders the README's picture of a team thread: TestTeamThreadCapture runs
# a team against the fake Discord and writes its thread as HTML, and a
# headless Chromium (Debian's: apt-get install chromium) screenshots it into
# docs/images/team-thread.png. Needs DATABASE_URL as make test does.
set -eu
cd "$(dirname "$0")/.."
html="$(mktemp -d)/team-thread.html"
go test -count=1 -run '^TestTeamThreadCapture$' ./cmd/callon -args -capture "$html" >/dev/null
chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
  --force-device-scale-factor=1 --window-size=900,800 \
  --screenshot="$PWD/docs/images/team-thread.png" "file://$html" 2>/dev/null
echo "wrote docs/images/team-thread.png"
