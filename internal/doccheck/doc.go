// Package doccheck checks the project's Markdown pages (README.md and
// docs/): every relative link names a file that exists and, where it names
// an anchor in a Markdown page, a heading of that page; and no line is
// longer than MaxLine. Its test runs the check over the repository, so a
// page moved or a heading renamed fails `make test` instead of leaving a
// dead link. It is a small reader of the Markdown the pages use, not a
// full CommonMark parser: inline links and images outside code.
package doccheck
