package master

// Line is one member's part of a reply presented as an exchange between
// the team's members (personas): written by the master, like the rest of
// its reply.
type Line struct {
	Member string `json:"member"`
	Text   string `json:"text"`
}
