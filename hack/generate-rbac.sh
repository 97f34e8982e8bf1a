#!/usr/bin/env bash
# Generates the controller's RBAC (config/rbac/role.yaml) from the
# +kubebuilder:rbac markers in internal/controller with controller-gen (a go
# tool of this module). Never edit the output by hand.
#
#   hack/generate-rbac.sh          regenerate in place
#   hack/generate-rbac.sh --check  fail when config/rbac/role.yaml is stale
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}

generate() { # $1: output folder
	(
		cd "$root"
		"$GO" tool controller-gen rbac:roleName=gpufleet-controller \
			paths=./internal/controller/... output:rbac:artifacts:config="$1"
	)
}

case "${1:-}" in
"")
	generate "$root/config/rbac"
	;;
--check)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	generate "$tmp"
	if ! diff -q "$root/config/rbac/role.yaml" "$tmp/role.yaml" >/dev/null 2>&1; then
		echo "config/rbac/role.yaml is not up to date; run 'hack/generate-rbac.sh':" >&2
		diff -u "$root/config/rbac/role.yaml" "$tmp/role.yaml" >&2 || true
		exit 1
	fi
	echo "config/rbac/role.yaml is up to date"
	;;
*)
	echo "usage: $0 [--check]" >&2
	exit 2
	;;
esac
