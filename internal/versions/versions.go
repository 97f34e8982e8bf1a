package versions

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Version is a parsed version. Its zero value is not a version: use Parse
// or MustParse.
type Version struct{ v *semver.Version }

// Parse reads s as a semantic version, tolerantly: a leading "v", a
// missing minor or patch ("570" is 570.0.0, "1.31" is 1.31.0) and leading
// zeros ("580.95.05") are accepted; a pre-release ("-rc.1") orders before
// its release, build metadata ("+build") is ignored in order.
func Parse(s string) (Version, error) {
	v, err := semver.NewVersion(s)
	if err != nil {
		return Version{}, err
	}
	return Version{v}, nil
}

// MustParse is Parse for a version the program itself writes; it panics on
// an error.
func MustParse(s string) Version { return Version{semver.MustParse(s)} }

// Compare orders v and w: -1, 0 or +1, by semantic versioning's rules.
func (v Version) Compare(w Version) int { return v.v.Compare(w.v) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// AtLeast reports whether v is w or newer.
func (v Version) AtLeast(w Version) bool { return v.Compare(w) >= 0 }

// Release is v without its pre-release: v25.10.0-rc.1's release is
// 25.10.0, for rules that take a pre-release for the release it precedes.
func (v Version) Release() Version {
	r, err := v.v.SetPrerelease("")
	if err != nil { // an empty pre-release is always valid
		panic(err)
	}
	return Version{&r}
}

// String is the version without a leading "v" and with every part:
// "v26.7" is "26.7.0".
func (v Version) String() string { return v.v.String() }

// Compare orders versions a and b as Version.Compare; ok is false when
// either does not parse, and then they have no order.
func Compare(a, b string) (order int, ok bool) {
	va, err := Parse(a)
	if err != nil {
		return 0, false
	}
	vb, err := Parse(b)
	if err != nil {
		return 0, false
	}
	return va.Compare(vb), true
}

// Range is a semver range such as ">=0.8.0 <0.9.0" or "~1.2".
type Range struct{ c *semver.Constraints }

// ParseRange reads a semver range as Flux's image policies do.
func ParseRange(s string) (Range, error) {
	c, err := semver.NewConstraint(s)
	if err != nil {
		return Range{}, err
	}
	return Range{c}, nil
}

// Contains reports whether v is in range r.
func (r Range) Contains(v Version) bool { return r.c.Check(v.v) }

// SameDriver reports whether a and b name one NVIDIA driver: NVIDIA writes
// 580.95.05, and a DRA driver's semver device attribute writes the same
// driver 580.95.5, so they are compared as versions, not as text. Two
// strings that do not parse are the same only when they are equal.
func SameDriver(a, b string) bool {
	if a == b {
		return true
	}
	order, ok := Compare(a, b)
	return ok && order == 0
}

// NVIDIADriver writes a driver version as NVIDIA does, the form the GPU
// Operator's driver images are tagged with and the fleet file takes: the
// third part has two digits, so a DRA driver's semver 580.95.5 is
// 580.95.05. ok is false for what is not major.minor.patch (a branch, a
// pre-release): such a string is no driver version NVIDIA writes.
func NVIDIADriver(s string) (string, bool) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	if err != nil {
		// Strict parsing refuses leading zeros: 580.95.05 is already
		// NVIDIA's form, read it tolerantly.
		if v, err = semver.NewVersion(s); err != nil || strings.Count(s, ".") != 2 {
			return "", false
		}
	}
	if v.Prerelease() != "" || v.Metadata() != "" {
		return "", false
	}
	return fmt.Sprintf("%d.%d.%02d", v.Major(), v.Minor(), v.Patch()), true
}
