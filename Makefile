# The test command of docs/development.md is `make test`; .ci/run calls exactly that.
GO ?= go
PKGS ?= ./...

.PHONY: test fmt-check vet build run compose-check

## test: gofmt check, go vet, and every test with the race detector against a real Postgres.
test: fmt-check vet
	@url="$$(./scripts/test-db.sh)" && \
	DATABASE_URL="$$url" $(GO) test -race -count=1 $(PKGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

build:
	$(GO) build -o bin/callon ./cmd/callon

run:
	$(GO) run ./cmd/callon

## compose-check: validate docker-compose.yml (and the dev file) as `docker compose config` does,
## with compose-go; needs no Docker. `make test` runs it too.
compose-check:
	$(GO) test -count=1 ./internal/deploytest
