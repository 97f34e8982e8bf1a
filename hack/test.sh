#!/usr/bin/env bash
# test.sh is `make test`: every check and test CI runs, arranged so that the
# testbed's build (hack/testbin.sh: the longest part on a cold machine, and
# CPU-bound) overlaps with the work that does not need it.
#
#   1. the testbed's programs start building in the background, kube's
#      first: until it is built the CPU is busy with it, and lint and the
#      tests then find the packages it compiled (apimachinery, client-go...)
#      in the Go build cache rather than compiling them beside it;
#   2. then, beside the rest of the testbed's build: lint, the generated
#      files' check, and the tests of the packages that need no testbed
#      program (pure code: the planner, the simulator, render's and the
#      fleet file's own tests...);
#   3. once the testbed is there, the packages that run it, several at once
#      (GPUFLEET_TEST_JOBS, default 4): their tests mostly wait on the
#      programs they drive, so two cores keep more than two of them busy.
#
# A package needs the testbed when its tests import internal/testworld/testbed (or
# sopstest, for the sops it builds), directly or not: `go list` says so,
# so a new package lands in the right phase by itself.
#
# Each phase's time is printed at the end (docs/development.md, "CI time").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

go_bin=${GO:-go}
make_bin=${MAKE:-make}
jobs=${GPUFLEET_TEST_JOBS:-4}
# Every go command under this script (lint, the testbed's build, the tests)
# compiles and links without DWARF: nothing here runs a debugger, and the
# compile costs a tenth less CPU (a cold build of gpufleet-controller: 184 s
# of CPU against 206 s). One setting for all of them, because the flags are
# part of a package's key in the Go build cache: the tests still find the
# packages the testbed's build compiled.
export GOFLAGS="-gcflags=all=-dwarf=false -ldflags=-w${GOFLAGS:+ $GOFLAGS}"
module=github.com/gpufleet/gpufleet
mkdir -p bin

began=$SECONDS
stamp() { printf '%s test: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

stamp "building the testbed in the background (log: bin/testbin.log)"
# hack/testbin.sh leaves this file (its kube_mark) once kube is built or
# found in its cache; one from an earlier run must not count.
kube_mark=bin/testbin/.kube-built
rm -f "$kube_mark"
bash hack/testbin.sh bin/testbin >bin/testbin.log 2>&1 &
testbin_pid=$!
# A failure below must not leave the build running.
trap 'kill "$testbin_pid" 2>/dev/null || true' EXIT

phase() { # NAME COMMAND...: run, and record how long it took
	local name=$1 start=$SECONDS
	shift
	stamp "$name"
	local rc=0
	"$@" || rc=$?
	times+=("$name: $((SECONDS - start))s")
	return "$rc"
}
times=()

run_logged() { # LOG COMMAND...: run, its output to the terminal and to LOG
	local log=$1
	shift
	set +e
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	set -e
	return "$rc"
}

failures() { # LOG: each failing test with the lines that say why
	echo
	echo "test: the failures (whole output: $1):"
	awk '/^[ \t]*--- FAIL/ { n = 12 } /testbed logs:|=== .* at the failure ===/ { n = 0 }
		/^(FAIL|panic:)/ { print; next } n > 0 { print; n-- }' "$1" | head -n 300
}

# The packages whose tests need the testbed, and the others.
testbed_deps="$module/internal/testworld/testbed $module/internal/secrets/sopstest"
need=$("$go_bin" list -test -f '{{if .ForTest}}{{.ForTest}}{{range .Deps}} {{.}}{{end}}{{end}}' ./... |
	awk -v deps="$testbed_deps" -v self="$module/internal/testworld/testbed" '
		BEGIN { n = split(deps, d, " "); for (i = 1; i <= n; i++) want[d[i]] = 1 }
		NF { uses = ($1 == self); for (i = 2; i <= NF; i++) if ($i in want) uses = 1; if (uses) print $1 }' | sort -u)
all=$("$go_bin" list ./...)
unit=$(comm -23 <(printf '%s\n' "$all" | sort) <(printf '%s\n' "$need"))
# In name order, on purpose: with the three longest started first (the
# end-to-end suite, the controller's, the testbed's) they ran together on
# a CPU already full, and a cold run failed three tests on their timeouts.

wait_kube() {
	while [[ ! -e $kube_mark ]] && kill -0 "$testbin_pid" 2>/dev/null; do
		sleep 2
	done
}
phase "waiting for kube's build (lint and the tests reuse what it compiles)" wait_kube
phase "lint and generated files" "$make_bin" --no-print-directory lint verify-generate
unit_log=bin/test-unit.log
# -vet=off below: lint has run go vet's analyzers (golangci-lint's govet)
# on every package, tests included; go test's own subset would run again.
if ! phase "tests without the testbed ($(wc -w <<<"$unit") packages)" \
	run_logged "$unit_log" "$go_bin" test -count=1 -vet=off -timeout 30m $unit; then
	failures "$unit_log"
	exit 1
fi

start=$SECONDS
stamp "waiting for the testbed"
if ! wait "$testbin_pid"; then
	cat bin/testbin.log >&2
	echo "test: building the testbed failed (above)" >&2
	exit 1
fi
tail -n 1 bin/testbin.log
times+=("waiting for the testbed after that: $((SECONDS - start))s")

# -parallel: the end-to-end suite's tests each run a world of their own.
# The output is kept in bin/test-testbed.log too: a failing world test
# prints the testbed's state after its error, so CI's tail of the log
# would show the dump and not the failure; the failures are printed again
# last.
testbed_log=bin/test-testbed.log
if ! phase "tests with the testbed ($(wc -w <<<"$need") packages, $jobs at once)" \
	run_logged "$testbed_log" "$go_bin" test -count=1 -vet=off -timeout 45m -p "$jobs" -parallel 3 $need; then
	failures "$testbed_log"
	exit 1
fi

trap - EXIT
stamp "done in $((SECONDS - began))s"
printf '  %s\n' "${times[@]}"
