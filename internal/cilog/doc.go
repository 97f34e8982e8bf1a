// Package cilog keeps what gpufleet prints from being read as anything but
// text by the CI system that shows it.
//
// A fleet repository's pull request decides file names, object names,
// Secret names, commit messages and chart contents, and verify (the check
// CI runs on it) prints them. A CI runner reads its job's output for
// commands: GitHub Actions takes a line beginning with "::" (after spaces)
// as a workflow command (::error …, ::add-mask::, ::stop-commands::TOKEN,
// which silences every command after it) and "##[" anywhere in a line as
// one of the older form; GitLab reads ANSI escapes and section markers
// ("\x1b[0Ksection_start:…\r"). Line makes one piece of such text inert on
// one line; Writer makes every line of a stream inert, except the workflow
// commands gpufleet writes itself through Commands.
package cilog
