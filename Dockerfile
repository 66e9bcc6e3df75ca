# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION=1.2.3 --build-arg REVISION=$(git rev-parse --short HEAD) .
# (.dockerignore keeps .git and .env out of the build, so the version comes
# from these arguments; `callon version` and callon_build_info show it.)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# Empty: callon reports the latest release of CHANGELOG.md with "+dev".
ARG VERSION=
ARG REVISION=
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
    -o /out/callon ./cmd/callon

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/callon /callon
USER nonroot:nonroot
# /healthz, /readyz and /metrics, when CALLON_HTTP_ADDR=:8080 (docker-compose.yml sets it).
EXPOSE 8080
ENTRYPOINT ["/callon"]
