#!/usr/bin/env bash
# tools.sh builds the development tools `make lint` runs (golangci-lint)
# from the Go module proxy, links them into the folder given as the only
# argument (default bin/tools) and prints the path of golangci-lint there;
# its progress goes to stderr, so `$(bash hack/tools.sh)` is the binary.
#
# Why not a `tool` line in go.mod, as controller-gen is: golangci-lint's
# dependencies would join the module's own and move its versions. Why a
# per-user cache: CI runs in a fresh clone, so a cache in the repository
# would be cold each time. Each tool is built once into
#   ${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/tools/<name>-<version>/
# and then hardlinked (or copied) into the destination. It is built again
# only when absent or built by another Go toolchain (its .stamp says which):
# a linter built by an older Go cannot load code written for a newer one.
# It has a lock of its own, apart from hack/testbin.sh's, so `make lint`
# never waits for the testbed's build.
#
# Environment:
#   GPUFLEET_CACHE  cache root (see above)
#   GO              the go command (default go)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-bin/tools}
case $dest in
/*) ;;
*) dest=$repo_root/$dest ;;
esac
cache_root=${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/tools
go_bin=${GO:-go}

golangci_lint_version=v2.15.0

mkdir -p "$cache_root" "$dest"
if command -v flock >/dev/null; then
	exec 8>"$cache_root/.lock"
	flock 8
fi

go_version=$("$go_bin" env GOVERSION)
entry=$cache_root/golangci-lint-$golangci_lint_version
stamp="golangci-lint $golangci_lint_version $go_version"
if [[ ! -f $entry/.stamp || "$(cat "$entry/.stamp")" != "$stamp" ]]; then
	start=$SECONDS
	printf '%s tools: building golangci-lint %s (a few minutes when cold)\n' "$(date -u +%H:%M:%S)" "$golangci_lint_version" >&2
	rm -rf "$entry.tmp" && mkdir -p "$entry.tmp"
	(cd "$entry.tmp" && GOWORK=off GOFLAGS="-buildvcs=false${GOFLAGS:+ $GOFLAGS}" GOBIN=$entry.tmp CGO_ENABLED=0 \
		"$go_bin" install -trimpath -ldflags "-s -w" "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_lint_version")
	printf '%s\n' "$stamp" >"$entry.tmp/.stamp"
	rm -rf "$entry" && mv "$entry.tmp" "$entry"
	printf '%s tools: built golangci-lint in %ss\n' "$(date -u +%H:%M:%S)" "$((SECONDS - start))" >&2
fi
rm -f "$dest/golangci-lint"
ln "$entry/golangci-lint" "$dest/golangci-lint" 2>/dev/null || cp "$entry/golangci-lint" "$dest/golangci-lint"
printf '%s\n' "$dest/golangci-lint"
