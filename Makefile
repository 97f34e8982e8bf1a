# gpufleet — docs/development.md says what each target does.
GO        ?= go
BIN       := bin
TESTBIN   := $(BIN)/testbin
TOOLS     := $(BIN)/tools
PKGS      := ./...
# No cgo anywhere (nothing needs it; releases are static): the tests, lint
# and the testbed's builds then share the Go build cache's packages.
export CGO_ENABLED ?= 0
# Tests that need the testbed find its binaries here (see hack/testbin.sh).
export GPUFLEET_TESTBIN := $(abspath $(TESTBIN))
# `gpufleet secret` runs sops; under make, the one testbin builds (tests that
# run the CLI in-process find it through this).
export GPUFLEET_SOPS := $(abspath $(TESTBIN))/sops

.PHONY: all build release test test-unit golden lint bench bench-peer generate verify-generate testbin soak-sim chaos fuzz clean

all: build

## build: compile the gpufleet binaries into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## release: the binaries users install, built as they ship (the Dockerfile's flags): static,
## stripped, paths trimmed, stamped with VERSION (default: git describe), into bin/release/
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
release:
	@mkdir -p $(BIN)/release
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/release/ ./cmd/gpufleet ./cmd/gpufleet-controller
	@ls -l $(BIN)/release/gpufleet $(BIN)/release/gpufleet-controller

## testbin: build the testbed programs (kube-apiserver, -controller-manager, -scheduler, etcd, Flux, the GPU Operator, kwok, sops; cached; slow the first time)
testbin:
	bash hack/testbin.sh $(TESTBIN)

## test: everything CI runs (hack/test.sh): the testbed builds in the background while lint, the
## generated files' check and the tests that need no testbed run; then the tests that need it,
## GPUFLEET_TEST_JOBS packages at once (default 4). Each phase's time is printed at the end.
test:
	GO=$(GO) MAKE=$(MAKE) bash hack/test.sh

## golden: rewrite every golden file (render's trees, the simulator's transcripts, lint's corpus,
## init's fleet files, the commands' JSON) from the code as it is; review `git diff` before committing.
## Some need the testbed (init on live clusters), so build it first.
GOLDEN_PKGS := ./internal/render/ ./internal/sim/ ./internal/lint/ ./internal/adopt/ ./internal/cli/
golden: testbin
	$(GO) test -count=1 $(GOLDEN_PKGS) -args -update
	@git status --short -- $(GOLDEN_PKGS)

## test-unit: the tests that need no testbed (fast)
test-unit:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt and golangci-lint v2.15.0 with .golangci.yml, go vet's analyzers among its linters
## (hack/tools.sh builds it into a per-user cache the first time, a few minutes; see docs/development.md,
## "The linter")
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@gl=$$(GO=$(GO) bash hack/tools.sh $(TOOLS)) && echo "$(TOOLS)/golangci-lint run $(PKGS)" && "$$gl" run $(PKGS)

## bench: performance figures (see docs/performance.md); BENCHTIME=3x for steadier numbers. The output
## goes to bin/bench.txt too, and the fleet-scale benchmarks (clusters=N, nodes=N) to docs/scaling.svg
BENCHTIME ?= 1x
BENCHOUT  ?= $(BIN)/bench.txt
bench: testbin
	@mkdir -p $(BIN)
	@{ $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 60m $(PKGS); echo $$? > $(BENCHOUT).rc; } | tee $(BENCHOUT)
	@rc=$$(cat $(BENCHOUT).rc); rm -f $(BENCHOUT).rc; [ "$$rc" = 0 ] || exit $$rc
	$(GO) run ./hack/benchplot -o docs/scaling.svg -title "make bench, $$(date -u +%F), load average $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" $(BENCHOUT)

## bench-peer: the GPU Operator's upgrade controller alone, gpufleet's actuator and the operator gated by gpufleet, on the real operator (docs/peer.md; not in make test). PEER_NODES=24,100 PEER_RUNS=3
PEER_NODES ?= 24
PEER_RUNS ?= 3
bench-peer: testbin
	GPUFLEET_PEER=1 GPUFLEET_PEER_NODES=$(PEER_NODES) GPUFLEET_PEER_RUNS=$(PEER_RUNS) GPUFLEET_PEER_TABLE=$(CURDIR)/bin/peer-table.md \
		$(GO) test -run '^$$' -bench '^BenchmarkPeer$$' -benchtime 1x -timeout 180m ./test/e2e/

## generate: CRDs and deepcopy from api/ markers, RBAC from the controller's markers (controller-gen),
## the admission policies of config/admission from api/v1alpha1's node labels (internal/admission)
generate:
	bash hack/generate.sh
	bash hack/generate-rbac.sh
	$(GO) test ./internal/admission -run '^TestConfigAdmissionIsGenerated$$' -update

## verify-generate: fail when generated files are not up to date
verify-generate:
	bash hack/generate.sh --check
	bash hack/generate-rbac.sh --check
	$(GO) test ./internal/admission -run '^TestConfigAdmissionIsGenerated$$'

## soak-sim: the planner's randomized invariant runs over many more seeds
soak-sim:
	GPUFLEET_SIM_SEEDS=20000 $(GO) test -count=1 -run 'Invariants' ./internal/planner/... ./internal/sim/...

## chaos: the controller, a separate process, killed with SIGKILL at seeded random moments during
## a 24-node rollout (and a kube-apiserver restart), over many seeds and kills; plus the leader
## hand-over. `make test` runs one seed of 10 kills.
CHAOS_SEEDS ?= 10
CHAOS_KILLS ?= 30
chaos: testbin
	GPUFLEET_CHAOS_SEEDS=$(CHAOS_SEEDS) GPUFLEET_CHAOS_KILLS=$(CHAOS_KILLS) $(GO) test -count=1 -timeout 120m -v \
	  -run 'TestControllerChaos|TestLeaderElectionHandover' ./internal/controller/

## fuzz: fuzz the fleet-file parser, its first pass against the decoder, and render over what it accepts, for a minute each
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./internal/fleet/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./internal/fleet/
	$(GO) test -run '^$$' -fuzz FuzzRender -fuzztime 60s ./internal/render/

clean:
	rm -rf $(BIN) out
