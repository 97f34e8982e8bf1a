package charts

import "strings"

// sameVersion compares chart versions with or without a leading v: tags say
// v25.10.1, some charts say 25.10.1.
func sameVersion(a, b string) bool {
	return strings.TrimPrefix(a, "v") == strings.TrimPrefix(b, "v")
}

// versionCandidates are the spellings of version to try, as given first.
func versionCandidates(version string) []string {
	if after, ok := strings.CutPrefix(version, "v"); ok {
		return []string{version, after}
	}
	return []string{version, "v" + version}
}

// CompareVersions orders chart versions numerically, part by part:
// v25.3.4 < v25.10.1. A leading v is ignored.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(pa) < len(pb):
		return -1
	case len(pa) > len(pb):
		return 1
	}
	return strings.Compare(a, b)
}

func versionParts(v string) []int {
	var out []int
	n, in := 0, false
	for _, r := range strings.TrimPrefix(v, "v") {
		if r >= '0' && r <= '9' {
			n, in = n*10+int(r-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	if in {
		out = append(out, n)
	}
	return out
}
