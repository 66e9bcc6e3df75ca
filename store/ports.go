package store

import (
	"github.com/callonbot/callon/dashboard"
	"github.com/callonbot/callon/master"
)

// Every port the store implements, checked at compile time: master's
// (declared by the code that calls each) and the dashboard's. The ports
// of bot and workers, which the store may not import, are checked where
// they are wired, in cmd/callon/ports.go.
var (
	_ master.APIStore          = (*Store)(nil)
	_ master.ApprovalStore     = (*Store)(nil)
	_ master.AttachmentStore   = (*Store)(nil)
	_ master.BacklogStore      = (*Store)(nil)
	_ master.CommandStore      = (*Store)(nil)
	_ master.DormancyStore     = (*Store)(nil)
	_ master.LimitStore        = (*Store)(nil)
	_ master.OrchestratorStore = (*Store)(nil)
	_ master.OutboxStore       = (*Store)(nil)
	_ master.PurgeStore        = (*Store)(nil)
	_ master.RoleStore         = (*Store)(nil)
	_ master.SessionStore      = (*Store)(nil)
	_ master.SpendStore        = (*Store)(nil)
	_ master.WebhookStore      = (*Store)(nil)
	_ dashboard.Store          = (*Store)(nil)
)
