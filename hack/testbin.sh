#!/usr/bin/env bash
# testbin.sh builds the programs the testbed runs (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, Flux's source-controller and
# kustomize-controller, Flux's image-reflector-, image-automation- and
# notification-controller, the NVIDIA GPU Operator, kwok, and sops, which
# "gpufleet secret" runs, and the Network Operator's OFED upgrade controller
# as the testbed plays it: hack/testbin/gpu-operator/ofed-upgrade) from the
# Go module proxy and puts them, with Flux's
# CRDs and the GPU Operator's state manifests, into the folder given as the
# only argument (default bin/testbin).
#
# Why a per-user cache: CI runs every job in a fresh clone on the same
# machine, so a cache inside the repository would be cold each time and the
# cold build takes about 30 minutes on 2 cores. Each program is built once into
#   ${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/testbin/<name>-<version>/
# and then hardlinked (or copied) into the destination.
#
# Why wrapper modules (hack/testbin/<name>/): "go install X@v" refuses most
# of these programs because their go.mod files carry replace directives, and
# would build each at its release's own versions of the modules it shares
# with gpufleet. Each wrapper requires the program, repeats the replaces its
# build needs and requires shared modules at gpufleet's versions where those
# are newer, so that the Go build cache compiles them once for all
# (TestWrappersShareVersions); its go.sum is committed so builds are
# reproducible. The wrapper is copied out of the repository before building
# so a build never edits tracked files.
#
# Environment:
#   GPUFLEET_CACHE         cache root (see above)
#   GPUFLEET_TESTBIN_JOBS  go build -p (default 2: keeps peak memory near 2.5 GB)
#   GPUFLEET_TESTBIN_FORCE set to 1 to rebuild even when the cache is current
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-bin/testbin}
case $dest in
/*) ;;
*) dest=$repo_root/$dest ;;
esac
cache_root=${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/testbin
jobs=${GPUFLEET_TESTBIN_JOBS:-2}
go_bin=${GO:-go}

kube_version=v1.37.2
# The file testbin.sh leaves in the destination once kube is built
# (hack/test.sh waits for it: its kube_mark).
kube_mark=.kube-built
etcd_version=v3.7.3
flux_version=v1.9.6
# Image automation and notifications: the newest versions the module proxy
# serves (newer ones are refused).
image_reflector_version=v1.2.3
image_automation_version=v1.2.3
notification_version=v1.9.3
# One wrapper builds all five Flux controllers; its cache entry is named
# after both releases.
flux_stamp=$flux_version-$image_reflector_version-$image_automation_version-$notification_version
flux_pkgs="github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller github.com/fluxcd/image-reflector-controller github.com/fluxcd/image-automation-controller github.com/fluxcd/notification-controller"
# The proxy serves the GPU Operator's source only at this pseudo-version: the
# commit of tag v25.3.4. The cache entry is named after the tag.
gpu_operator_tag=v25.3.4
gpu_operator_version=v0.0.0-20250917190837-d73a0086a6ba
# The Network Operator's OFED upgrade controller (hack/testbin/gpu-operator/
# ofed-upgrade): k8s-operator-libs' upgrade state machine at the version the
# GPU Operator's wrapper pins (the Network Operator itself is not served).
# Its cache entry is named after that version; its stamp records a hash of
# its main.go and of the wrapper's go.mod and go.sum.
ofed_upgrade_version=v0.0.0-20250311214045-7d667fbaa7ac
kwok_version=v0.8.0
# The sops that "gpufleet secret" runs in the tests.
sops_version=v3.13.3
# Argo CD (application-controller and repo-server) and the kustomize its
# repo-server runs: this one build needs Go 1.27 (argo-cd's go.mod says so);
# the go command fetches that toolchain from the module proxy. The cache entry
# is named after Argo CD's version; the stamp records kustomize's too.
argocd_version=v3.6.1
argocd_kustomize_version=v5.8.2
argocd_toolchain=go1.27.3

log() { printf '%s testbin: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
	log "error: $*" >&2
	exit 1
}

command -v "$go_bin" >/dev/null || die "go not found in PATH"
go_version=$("$go_bin" env GOVERSION)
mkdir -p "$cache_root" "$dest"

# Two fresh clones building at once must not race on the same cache entry.
if command -v flock >/dev/null; then
	exec 9>"$cache_root/.lock"
	if ! flock -n 9; then
		log "waiting for another testbin build to finish ($cache_root/.lock)"
		flock 9
	fi
fi

# stamp_of prints what a cache entry must record to be reused: the program's
# version, the Go toolchain that built it and a hash of the wrapper module it
# was built from (its go.mod pins the versions under it; its main.go, where
# it has one, is part of what is built).
stamp_of() {
	local toolchain=$go_version extra="" wrapper=$repo_root/hack/testbin/$1 files
	case $1 in
	argocd) toolchain=$argocd_toolchain extra=" kustomize $argocd_kustomize_version" ;;
	ofed-upgrade) # built from the GPU Operator's wrapper, with a main.go of its own
		wrapper=$repo_root/hack/testbin/gpu-operator
		extra=" main $(sha256sum <"$wrapper/ofed-upgrade/main.go" | cut -c1-12)"
		;;
	esac
	if [[ -d $wrapper ]]; then
		files=$(find "$wrapper" -maxdepth 1 -type f | LC_ALL=C sort)
		# shellcheck disable=SC2086 # file names without spaces, one per word
		extra+=" wrapper $(cat $files | sha256sum | cut -c1-12)"
	fi
	printf '%s %s %s%s\n' "$1" "$2" "$toolchain" "$extra"
}

# fresh NAME VERSION succeeds when the cache entry exists and is of that version.
fresh() {
	local dir=$cache_root/$1-$2
	[[ ${GPUFLEET_TESTBIN_FORCE:-0} != 1 ]] &&
		[[ -f $dir/.stamp ]] &&
		[[ "$(cat "$dir/.stamp")" == "$(stamp_of "$1" "$2")" ]]
}

# prepare_src NAME copies the wrapper module NAME to a scratch folder in the
# cache and prints that folder.
prepare_src() {
	local src=$cache_root/src/$1
	rm -rf "$src"
	mkdir -p "$src"
	cp "$repo_root/hack/testbin/$1/go.mod" "$repo_root/hack/testbin/$1/tools.go" "$src/"
	if [[ -f $repo_root/hack/testbin/$1/main.go ]]; then
		cp "$repo_root/hack/testbin/$1/main.go" "$src/"
	fi
	if [[ -f $repo_root/hack/testbin/$1/go.sum ]]; then
		cp "$repo_root/hack/testbin/$1/go.sum" "$src/"
	fi
	# A program of the wrapper's own (gpu-operator/ofed-upgrade) is a
	# package in a folder of it.
	if [[ -f $repo_root/hack/testbin/$1/ofed-upgrade/main.go ]]; then
		cp -r "$repo_root/hack/testbin/$1/ofed-upgrade" "$src/"
	fi
	printf '%s\n' "$src"
}

# gobuild OUT PKGS [LDFLAGS] builds the programs PKGS (space-separated; OUT is
# then a folder ending in /), one build at a time, so the link steps (2.4 GB
# for kube-apiserver) never overlap with another build's.
#
# The flags are the tests' own (the Makefile sets CGO_ENABLED=0; no
# -trimpath, which changes every package's build ID): with the kube wrapper
# at gpufleet's module versions, the Go build cache compiles the packages
# both use (apimachinery, client-go, apiserver...) once for both.
gobuild() {
	local out=$1 pkgs=$2 ldflags=${3:-}
	local start=$SECONDS
	log "building $pkgs (this takes minutes when cold)"
	# shellcheck disable=SC2086 # PKGS is a list on purpose
	GOWORK=off GOFLAGS="-mod=mod -buildvcs=false${GOFLAGS:+ $GOFLAGS}" CGO_ENABLED=0 \
		"$go_bin" build -p "$jobs" -ldflags "-s -w $ldflags" -o "$out" $pkgs
	log "built $pkgs in $((SECONDS - start))s"
}

# finish NAME VERSION TMPDIR moves a completed build into place and stamps it.
finish() {
	local dir=$cache_root/$1-$2
	stamp_of "$1" "$2" >"$3/.stamp"
	rm -rf "$dir"
	mv "$3" "$dir"
}

build_etcd() {
	local src tmp=$cache_root/etcd-$etcd_version.tmp
	src=$(prepare_src etcd)
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$src" && gobuild "$tmp/etcd" go.etcd.io/etcd/server/v3)
	finish etcd "$etcd_version" "$tmp"
}

# build_kube builds kube-apiserver, kube-controller-manager and kube-scheduler
# in one "go build": they share most of their packages, so the second and
# third cost little more than their own code and link.
build_kube() {
	local src tmp=$cache_root/kube-$kube_version.tmp ldflags="" pkg
	src=$(prepare_src kube)
	rm -rf "$tmp" && mkdir -p "$tmp"
	# Without these, /version reports v0.0.0-master and clients warn about skew.
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
	done
	(cd "$src" && gobuild "$tmp/" "k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler" "$ldflags")
	finish kube "$kube_version" "$tmp"
}

# build_gpu_operator builds the GPU Operator and keeps, from the same module,
# the state manifests it reads at run time: assets/* (ClusterPolicy states)
# and manifests/ (the NVIDIADriver state), laid out as the operator expects
# them under /opt/gpu-operator. The testbed bind-mounts that folder there in a
# private mount namespace, so the host's /opt is never written.
build_gpu_operator() {
	local src tmp=$cache_root/gpu-operator-$gpu_operator_tag.tmp dir
	src=$(prepare_src gpu-operator)
	rm -rf "$tmp" && mkdir -p "$tmp/gpu-operator-assets"
	(cd "$src" && gobuild "$tmp/gpu-operator" github.com/NVIDIA/gpu-operator/cmd/gpu-operator)
	dir=$(cd "$src" && GOWORK=off GOFLAGS=-mod=mod "$go_bin" list -m -f '{{.Dir}}' github.com/NVIDIA/gpu-operator)
	[[ -d $dir/assets && -d $dir/manifests ]] || die "no assets/ or manifests/ in $dir"
	cp -r "$dir"/assets/. "$tmp/gpu-operator-assets/"
	cp -r "$dir/manifests" "$tmp/gpu-operator-assets/manifests"
	chmod -R u+w "$tmp/gpu-operator-assets"
	finish gpu-operator "$gpu_operator_tag" "$tmp"
}

# build_ofed_upgrade builds the Network Operator's OFED upgrade controller
# as the testbed plays it, with one "go build" in a copy of the GPU
# Operator's wrapper: same module, same pinned versions, so once the GPU
# Operator is built the Go build cache makes this take seconds.
build_ofed_upgrade() {
	local src tmp=$cache_root/ofed-upgrade-$ofed_upgrade_version.tmp
	src=$(prepare_src gpu-operator)
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$src" && gobuild "$tmp/ofed-upgrade" ./ofed-upgrade)
	finish ofed-upgrade "$ofed_upgrade_version" "$tmp"
}

build_kwok() {
	local src tmp=$cache_root/kwok-$kwok_version.tmp
	src=$(prepare_src kwok)
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$src" && gobuild "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
	finish kwok "$kwok_version" "$tmp"
}

build_sops() {
	local src tmp=$cache_root/sops-$sops_version.tmp
	src=$(prepare_src sops)
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$src" && gobuild "$tmp/sops" github.com/getsops/sops/v3/cmd/sops)
	finish sops "$sops_version" "$tmp"
}

# build_flux builds Flux's five controllers in one "go build" of one wrapper
# module (they share most of their packages: compiled once) and keeps their
# CRDs: source and kustomize in crds/flux, which every Flux cluster gets;
# image automation and notification in crds/flux-image, installed only in the
# clusters that run those controllers.
build_flux() {
	local src tmp=$cache_root/flux-$flux_stamp.tmp ctrl dir crds
	src=$(prepare_src flux)
	rm -rf "$tmp" && mkdir -p "$tmp/crds/flux" "$tmp/crds/flux-image"
	(cd "$src" && gobuild "$tmp/" "$flux_pkgs")
	for ctrl in source-controller kustomize-controller image-reflector-controller image-automation-controller notification-controller; do
		[[ -x $tmp/$ctrl ]] || die "the Flux build left no $ctrl in $tmp"
		# The CRDs ship only in the controllers' full modules, which a fresh
		# module cache lacks (it has just their api submodules): keep a copy.
		dir=$(cd "$src" && GOWORK=off GOFLAGS=-mod=mod "$go_bin" list -m -f '{{.Dir}}' "github.com/fluxcd/$ctrl")
		[[ -d $dir/config/crd/bases ]] || die "no CRDs in $dir/config/crd/bases"
		crds=flux-image
		[[ $ctrl == source-controller || $ctrl == kustomize-controller ]] && crds=flux
		cp "$dir"/config/crd/bases/*.yaml "$tmp/crds/$crds/"
	done
	chmod u+w "$tmp"/crds/flux/*.yaml "$tmp"/crds/flux-image/*.yaml
	finish flux "$flux_stamp" "$tmp"
}

# build_argocd builds Argo CD's application-controller and repo-server (one
# binary, hack/testbin/argocd/main.go: argo-cd's own cmd links every Argo CD
# program) and kustomize in one "go build", and keeps from the same module
# what the testbed installs: the Application and AppProject CRDs, the config
# objects (argocd-cm, argocd-secret, ...) and git-verify-wrapper.sh, which
# the repo-server runs on every manifest generation (without it every sync
# fails with "permission denied").
build_argocd() {
	local src tmp=$cache_root/argocd-$argocd_version.tmp dir
	src=$(prepare_src argocd)
	rm -rf "$tmp" && mkdir -p "$tmp/crds/argocd" "$tmp/argocd-config"
	(cd "$src" && GOTOOLCHAIN=$argocd_toolchain gobuild "$tmp/" ". sigs.k8s.io/kustomize/kustomize/v5")
	[[ -x $tmp/argocd && -x $tmp/kustomize ]] || die "the Argo CD build left no argocd or kustomize in $tmp"
	dir=$(cd "$src" && GOTOOLCHAIN=$argocd_toolchain GOWORK=off GOFLAGS=-mod=mod "$go_bin" list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
	[[ -d $dir/manifests/crds && -d $dir/manifests/base/config ]] || die "no manifests/ in $dir"
	cp "$dir"/manifests/crds/application-crd.yaml "$dir"/manifests/crds/appproject-crd.yaml "$tmp/crds/argocd/"
	cp "$dir"/manifests/base/config/argocd-*.yaml "$tmp/argocd-config/"
	cp "$dir/hack/git-verify-wrapper.sh" "$tmp/git-verify-wrapper.sh"
	chmod -R u+w "$tmp"
	chmod +x "$tmp/git-verify-wrapper.sh"
	finish argocd "$argocd_version" "$tmp"
}

# link_into copies the files of cache entry DIR into the destination,
# hardlinking when both are on one file system.
link_into() {
	local from=$1 f rel
	(cd "$from" && find . -type f ! -name .stamp) | while read -r f; do
		rel=${f#./}
		mkdir -p "$(dirname "$dest/$rel")"
		rm -f "$dest/$rel"
		ln "$from/$rel" "$dest/$rel" 2>/dev/null || cp "$from/$rel" "$dest/$rel"
	done
}

# prefetch NAME PKGS [TOOLCHAIN] has the go command fetch, in the background,
# every module the build of PKGS in wrapper NAME needs (go list -deps loads
# exactly what go build would). Fetching is network-bound and building
# CPU-bound: on a cold machine the builds after the first find their modules
# in the module cache, rather than each waiting for its own downloads. A
# failed prefetch costs nothing: the build fetches what is missing itself.
prefetches=()
prefetch() {
	local name=$1 pkgs=$2 toolchain=${3:-} src=$cache_root/prefetch/$1
	rm -rf "$src" && mkdir -p "$src"
	cp "$repo_root/hack/testbin/$name"/*.go "$repo_root/hack/testbin/$name/go.mod" "$src/"
	if [[ -d $repo_root/hack/testbin/$name/ofed-upgrade ]]; then
		cp -r "$repo_root/hack/testbin/$name/ofed-upgrade" "$src/"
	fi
	if [[ -f $repo_root/hack/testbin/$name/go.sum ]]; then
		cp "$repo_root/hack/testbin/$name/go.sum" "$src/"
	fi
	# shellcheck disable=SC2086 # PKGS is a list on purpose
	(cd "$src" && env ${toolchain:+GOTOOLCHAIN=$toolchain} GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 \
		nice "$go_bin" list -e -deps -f '' $pkgs >"$src.log" 2>&1) &
	prefetches+=($!)
}

started=$SECONDS
log "cache: $cache_root"
log "destination: $dest"
fresh kube "$kube_version" || prefetch kube "k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler"
ofed_pkgs=""
fresh ofed-upgrade "$ofed_upgrade_version" || ofed_pkgs=" ./ofed-upgrade"
if ! fresh gpu-operator "$gpu_operator_tag"; then
	prefetch gpu-operator "github.com/NVIDIA/gpu-operator/cmd/gpu-operator$ofed_pkgs"
elif [[ -n $ofed_pkgs ]]; then
	prefetch gpu-operator ./ofed-upgrade
fi
fresh kwok "$kwok_version" || prefetch kwok sigs.k8s.io/kwok/cmd/kwok
fresh sops "$sops_version" || prefetch sops github.com/getsops/sops/v3/cmd/sops
fresh flux "$flux_stamp" || prefetch flux "$flux_pkgs"
fresh argocd "$argocd_version" || prefetch argocd ". sigs.k8s.io/kustomize/kustomize/v5" "$argocd_toolchain"
# kube first, and a mark when it is in place: hack/test.sh starts lint and
# the tests only then, so that they find in the Go build cache the packages
# this build compiled (two builds compiling one package at once both pay).
rm -f "$dest/$kube_mark"
for item in "kube $kube_version build_kube" \
	"etcd $etcd_version build_etcd" \
	"gpu-operator $gpu_operator_tag build_gpu_operator" \
	"ofed-upgrade $ofed_upgrade_version build_ofed_upgrade" \
	"kwok $kwok_version build_kwok" \
	"sops $sops_version build_sops" \
	"flux $flux_stamp build_flux" \
	"argocd $argocd_version build_argocd"; do
	read -r name version builder <<<"$item"
	if fresh "$name" "$version"; then
		log "$name $version: cached"
	else
		log "$name $version: building"
		"$builder"
	fi
	link_into "$cache_root/$name-$version"
	[[ $name != kube ]] || touch "$dest/$kube_mark"
done
if ((${#prefetches[@]} > 0)); then
	wait "${prefetches[@]}" || true
	rm -rf "$cache_root/prefetch"
fi
{
	echo "etcd $etcd_version"
	echo "kube-apiserver $kube_version"
	echo "kube-controller-manager $kube_version"
	echo "kube-scheduler $kube_version"
	echo "source-controller $flux_version"
	echo "kustomize-controller $flux_version"
	echo "image-reflector-controller $image_reflector_version"
	echo "image-automation-controller $image_automation_version"
	echo "notification-controller $notification_version"
	echo "gpu-operator $gpu_operator_tag ($gpu_operator_version)"
	echo "ofed-upgrade k8s-operator-libs $ofed_upgrade_version (the Network Operator's OFED upgrade controller, played)"
	echo "kwok $kwok_version"
	echo "sops $sops_version"
	echo "argocd $argocd_version (application-controller, repo-server; built with $argocd_toolchain)"
	echo "kustomize $argocd_kustomize_version"
	echo "built-with $go_version"
} >"$dest/VERSIONS"
log "done in $((SECONDS - started))s: $(cd "$dest" && echo etcd kube-apiserver kube-controller-manager kube-scheduler \
	source-controller kustomize-controller image-reflector-controller image-automation-controller \
	notification-controller gpu-operator ofed-upgrade kwok sops argocd kustomize)"
