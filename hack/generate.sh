#!/usr/bin/env bash
# Generates the DriverRollout CRD and deepcopy functions from the markers in
# api/ with controller-gen (a go tool of this module). Never edit the output
# by hand.
#
#   hack/generate.sh          regenerate in place
#   hack/generate.sh --check  regenerate into a temporary copy and fail,
#                             listing the files that differ, when the
#                             committed output is not up to date
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}

generate() { # $1: module root to generate in
	(
		cd "$1"
		"$GO" tool controller-gen object paths=./api/...
		"$GO" tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	)
}

case "${1:-}" in
"")
	generate "$root"
	;;
--check)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# The copy holds what generation reads (the module files and api/) and
	# what it writes (config/crd), so a stale or stray file shows up too.
	cp "$root/go.mod" "$root/go.sum" "$tmp/"
	cp -R "$root/api" "$tmp/api"
	mkdir -p "$tmp/config/crd/bases"
	if [ -d "$root/config/crd/bases" ]; then
		cp -R "$root/config/crd/bases/." "$tmp/config/crd/bases/"
	fi
	# Output is written afresh: remove the old so a deleted type is noticed.
	rm -f "$tmp"/config/crd/bases/*.yaml
	find "$tmp/api" -name 'zz_generated.deepcopy.go' -delete
	generate "$tmp"
	differ=$(diff -rq "$root/api" "$tmp/api" 2>&1; diff -rq "$root/config/crd/bases" "$tmp/config/crd/bases" 2>&1) || true
	if [ -n "$differ" ]; then
		echo "generated files are not up to date; run 'make generate':" >&2
		echo "$differ" | sed -e "s#$tmp/##g" -e "s#$root/##g" >&2
		exit 1
	fi
	echo "generated files are up to date"
	;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac
