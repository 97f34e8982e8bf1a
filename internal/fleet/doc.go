// Package fleet reads and validates fleet.toml, the one file that says which
// GPU software releases exist, which clusters run what (GPU pools, MIG
// profiles checked per product), the waves a release is promoted through,
// the node rollout policy (resolved once per cluster), the LLM serving stack
// (services, their GPU needs and where they are placed, secrets, age
// recipients) and where the promotion stands.
//
// Parsing is strict: an unknown key, a wrong type or shape, a dangling
// reference, a malformed version or duration is a Problem that names the
// file, line, column and key; Load reports every problem it finds at once.
package fleet
