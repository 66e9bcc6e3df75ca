# The test command of docs/development.md is `make test`; .ci/run calls exactly that.
GO ?= go
PKGS ?= ./...
# golangci-lint, pinned: built from the Go module proxy on first use, then cached.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

.PHONY: test fmt-check vet lint chromium-check bench-river-check build run compose-check

## test: gofmt check, go vet, golangci-lint (.golangci.yml), and every test with the race
## detector against a real Postgres (the dashboard's browser tests included: they need
## Chromium; 30 minutes per package: internal/releasetest builds GoReleaser the first time
## on a machine).
test: fmt-check vet lint chromium-check bench-river-check
	@url="$$(./scripts/test-db.sh)" && \
	DATABASE_URL="$$url" $(GO) test -race -count=1 -timeout 30m $(PKGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## bench-river-check: bench/river (a module of its own, so that River never enters callon's
## dependencies) still builds against callon's packages: go vet compiles it.
bench-river-check:
	cd bench/river && $(GO) vet ./...

## lint: the linters of .golangci.yml, each with the reason it is there.
lint:
	$(GOLANGCI_LINT) run $(PKGS)

## chromium-check: the dashboard's browser tests drive Chromium; without it `make test` fails
## here, saying how to install it (CALLON_TEST_CHROMIUM may name another Chromium binary).
chromium-check:
	@if [ -z "$$CALLON_TEST_CHROMIUM" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		echo "Chromium is missing: the dashboard's browser tests need it. Install it: apt-get install -y chromium"; exit 1; fi

build:
	$(GO) build -o bin/callon ./cmd/callon

run:
	$(GO) run ./cmd/callon

## compose-check: validate docker-compose.yml and its overrides as `docker compose config` does,
## with compose-go; needs no Docker. `make test` runs it too.
compose-check:
	$(GO) test -count=1 ./internal/deploytest
