// Package bot is the discordgo adapter: it connects to Discord, registers
// callon's slash commands, routes interactions and messages to the master,
// and posts for it. discordgo is imported here and nowhere else but in
// bot/discordtest, the fake Discord its tests run against.
package bot
