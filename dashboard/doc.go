// Package dashboard is callon's operator dashboard: server-rendered pages
// under /dashboard/ (an overview of every server's teams and day, a
// team's timeline, the roles' reliability, the signals' trail), kept live
// by Server-Sent Events, for the operator (CALLON_DASHBOARD_TOKEN) and,
// with Discord OAuth2, for server admins, who see only the servers they
// manage. It is read-only. It reads through its own port (Store), which
// package store implements; it imports no other adapter, and its
// scripts (htmx with its SSE extension, uPlot) are vendored and embedded.
package dashboard
