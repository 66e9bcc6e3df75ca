package main

import (
	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/workers"
)

// The ports of bot and workers the store implements, checked at compile
// time here, where they are wired (the store may import neither).
var (
	_ bot.Store       = (*store.Store)(nil)
	_ bot.StatusStore = (*store.Store)(nil)
	_ bot.SettleStore = (*store.Store)(nil)
	_ workers.Store   = (*store.Store)(nil)
)
