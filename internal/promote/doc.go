// Package promote moves a release through the fleet's waves by editing the
// [promotion] table of fleet.toml: start, promote, approve, pause, resume and
// abort each change the fewest lines (the rest of the file is kept byte for
// byte), re-render, and make one git commit whose message says what and why.
//
// The state machine (state.go) is pure; the file edit (edit.go) works on
// bytes; Apply (apply.go) is the only part that writes files, runs git, and
// puts everything back when any step fails.
package promote
