// Package fleet reads and validates fleet.toml, the one file that says which
// GPU software releases exist, which clusters run what, the waves a release
// is promoted through, the node rollout policy and where the promotion
// stands.
//
// Parsing is strict: an unknown key, a wrong type, a dangling reference, a
// malformed version or duration is a Problem that names the file, line,
// column and key; Load reports every problem it finds at once.
package fleet
