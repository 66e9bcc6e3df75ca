// Package demo is `callon chat --demo`: a scripted stand-in for the
// team's model, served by llm/llmfake, so a newcomer sees a team answer,
// fan out, ask a question and use a tool with nothing but Postgres. Its
// team (Roles) and its one tool (Toolbox: dice, which touches nothing on
// the host and waits for an approval) go with it. Every answer of the
// coordinator says, in its footer, that a script wrote it.
package demo
