package adopt

import (
	"regexp"
	"strings"
)

var (
	// dnsLabel is what the fleet file takes as a cluster, pool, wave,
	// environment or release name (they end up in object names), at most
	// 63 characters.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// chartVersion is a chart version as the fleet file takes it.
	chartVersion = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	// driverVersion is an NVIDIA driver version, branch.minor[.patch].
	driverVersion = regexp.MustCompile(`^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$`)
	// driverBranch is a driver branch, what a precompiled driver names.
	driverBranch = regexp.MustCompile(`^[0-9]{3}$`)
	// migLayout is a MIG layout the fleet file can name: every GPU in one
	// profile, or all-balanced (mig-parted's default configurations).
	migLayout = regexp.MustCompile(`^(all-balanced|all-[1-7]g\.[0-9]+gb(\.me)?)$`)
	// modelWord is the model word of a GPU product label: H100, A100,
	// L40S, GB200, A10G, V100, A6000.
	modelWord = regexp.MustCompile(`^[A-Za-z]{1,3}[0-9]{1,4}[A-Za-z]{0,2}$`)
)

// maxName is the longest name the fleet file takes; maxHelmRelease the
// longest Helm release name.
const (
	maxName        = 63
	maxHelmRelease = 53
)

// ValidName reports whether s can name a cluster, pool, wave, environment
// or release in the fleet file.
func ValidName(s string) bool { return len(s) <= maxName && dnsLabel.MatchString(s) }

// validRelease reports whether s can be a Helm release name.
func validRelease(s string) bool { return len(s) <= maxHelmRelease && dnsLabel.MatchString(s) }

// BaseProduct is a GPU product label without what GPU Feature Discovery
// adds for the way the GPU is shared: "-SHARED" under time-slicing or MPS,
// "-MIG-<profile>" under MIG's single strategy. The pool's product (and
// render's NVIDIADriver selector) is the GPU itself.
//
//	NVIDIA-A100-SXM4-40GB-MIG-1g.5gb         → NVIDIA-A100-SXM4-40GB
//	NVIDIA-H100-80GB-HBM3-SHARED             → NVIDIA-H100-80GB-HBM3
//	NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED  → NVIDIA-A100-SXM4-40GB
func BaseProduct(product string) string {
	p := strings.TrimSuffix(product, "-SHARED")
	if i := strings.Index(p, "-MIG-"); i > 0 {
		p = p[:i]
	}
	return p
}

// ProductModel is the readable short name of a GPU product: its model
// word, lower-case (NVIDIA-H100-80GB-HBM3 → h100, NVIDIA-A100-SXM4-80GB →
// a100, NVIDIA-L40S → l40s, Tesla-T4 → t4), or, when no word looks like a
// model, the whole product made a name (NVIDIA-GeForce-RTX-4090 →
// geforce-rtx-4090).
func ProductModel(product string) string {
	for _, w := range strings.FieldsFunc(product, func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		if modelWord.MatchString(w) && !strings.EqualFold(w, "NVIDIA") {
			return strings.ToLower(w)
		}
	}
	return ProductSlug(product)
}

// ProductSlug is the whole product label made a name, without the vendor:
// NVIDIA-A100-SXM4-80GB → a100-sxm4-80gb.
func ProductSlug(product string) string {
	s := slug(product)
	if rest, ok := strings.CutPrefix(s, "nvidia-"); ok && rest != "" {
		s = rest
	}
	return s
}

// migSlug is a MIG layout made a name part: all-1g.10gb → 1g-10gb,
// all-balanced → balanced, all-1g.10gb.me → 1g-10gb-me.
func migSlug(layout string) string {
	return slug(strings.TrimPrefix(layout, "all-"))
}

// slug lower-cases s and turns every run of other characters than letters
// and digits into one '-', trimmed at both ends.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// fit cuts name so that name+suffix is at most maxName long, and ends
// with a letter or digit.
func fit(name, suffix string) string {
	if len(name)+len(suffix) > maxName {
		name = strings.TrimRight(name[:maxName-len(suffix)], "-")
	}
	return name + suffix
}

// stagingWords are the words of a context name that make its cluster a
// staging one by default (DefaultEnvironment).
var stagingWords = map[string]bool{"staging": true, "stage": true, "stg": true, "dev": true, "test": true, "qa": true}

// prodWords are the words of an environment name that put its wave last
// by default.
var prodWords = map[string]bool{"prod": true, "production": true, "prd": true}

// words splits a name at every character that is not a letter or digit.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
}

// DefaultEnvironment is the environment of a cluster that --environment
// does not name: "staging" when a word of its context's name says so
// (staging, stage, stg, dev, test, qa: stg-h100, eu-dev-1, gpu_test),
// otherwise "prod". A word, not a substring: "devon-prod" is prod.
func DefaultEnvironment(context string) string {
	for _, w := range words(context) {
		if stagingWords[w] {
			return "staging"
		}
	}
	return "prod"
}

// ReleaseName is the default name of the release init writes: the
// versions that run, as a name (dots made dashes, which a release name
// cannot hold):
//
//	GPU Operator v25.3.4, Network Operator v25.4.0, driver 570.172.08
//	→ gpuop-v25-3-4-netop-v25-4-0-drv-570-172-08
//
// It is deterministic (the same fleet gives the same name, unlike a date),
// and says what it is wherever it appears: approvals, the DriverRollout,
// `gpufleet status`. --release chooses another.
func ReleaseName(r Release) string {
	name := "gpuop-" + slug(r.GPUOperator)
	if r.NetworkOperator != "" {
		name += "-netop-" + slug(r.NetworkOperator)
	}
	return fit(name+"-drv-"+slug(r.Driver), "")
}

// withV is a chart version with the leading "v" the fleet file writes
// (NVIDIA's GPU Operator chart versions have it; Helm labels of other
// charts may not).
func withV(version string) string {
	if strings.HasPrefix(version, "v") {
		return version
	}
	return "v" + version
}
