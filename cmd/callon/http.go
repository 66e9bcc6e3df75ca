package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/config"
)

// check is one condition of readiness: "" when it holds, else what is
// wrong.
type check func(ctx context.Context) string

// readiness is what /readyz answers: ready, or what is down by name.
type readiness struct {
	Ready bool              `json:"ready"`
	Down  map[string]string `json:"down,omitempty"`
}

// probeTimeout bounds one readiness check.
const probeTimeout = 2 * time.Second

// newOpsHandler serves GET /healthz (the process runs), GET /readyz (200
// while every check holds, else 503 naming what is down), GET /metrics,
// when api is not nil the inbound API under /v1/, and when dash is not
// nil the dashboard under /dashboard/.
func newOpsHandler(checks map[string]check, metrics http.Handler, api, dash http.Handler) http.Handler {
	mux := http.NewServeMux()
	if api != nil {
		mux.Handle("/v1/", api)
	}
	if dash != nil {
		mux.Handle("/dashboard/", dash)
		mux.Handle("/dashboard", dash)
	}
	// Personas' pictures, for Discord to fetch (CALLON_PUBLIC_URL).
	mux.Handle("GET /avatars/{file}", bot.AvatarHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
		defer cancel()
		res := readiness{Ready: true}
		for name, c := range checks {
			if problem := c(ctx); problem != "" {
				res.Ready = false
				if res.Down == nil {
					res.Down = map[string]string{}
				}
				res.Down[name] = problem
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if !res.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(res)
	})
	mux.Handle("GET /metrics", metrics)
	return mux
}

// serveHTTP serves h on addr until ctx ends.
func serveHTTP(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving HTTP: /healthz, /readyz, /metrics (/v1/ when CALLON_API_SECRET is set, /dashboard/ when a dashboard sign-in is)", "addr", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http endpoint %s: %w", addr, err)
	}
	return nil
}

// healthcheck asks this host's callon whether it is ready (GET /readyz at
// CALLON_HTTP_ADDR) and fails unless it is: a container health check
// for an image without curl.
func healthcheck(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	if cfg.HTTPAddr == "" {
		if err := cfg.Validate(0); err != nil {
			return configError(err)
		}
		return errors.New("CALLON_HTTP_ADDR is not set: callon serves /readyz only when it is")
	}
	u, err := readyURL(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}

// readyURL is the /readyz URL of a listen address; an address that
// listens on every interface (":8080", "0.0.0.0:8080", "[::]:8080") is
// reached on loopback.
func readyURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("CALLON_HTTP_ADDR %q: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
