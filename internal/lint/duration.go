package lint

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// fluxDurationPattern is what Flux's CRDs accept for a duration
// (metav1.Duration with this pattern): "1d" or "5 m" are refused by the
// API server, though some of them parse elsewhere.
var fluxDurationPattern = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`)

// fluxDuration parses a duration as Flux's CRDs accept it.
func fluxDuration(s string) (time.Duration, error) {
	if !fluxDurationPattern.MatchString(s) {
		return 0, fmt.Errorf("%q is not a duration Flux accepts (e.g. 30s, 5m, 1h30m)", s)
	}
	return time.ParseDuration(s)
}

// required are the Flux kinds whose spec.interval the CRD requires.
var required = map[string]bool{"Kustomization": true, "HelmRelease": true, "GitRepository": true, "HelmRepository": true, "OCIRepository": true, "ImageRepository": true, "ImageUpdateAutomation": true}

// checkDurations reports the durations of a Flux object that the API server
// would refuse (before: read as 0s), and a required interval that is
// missing.
func checkDurations(d *doc) []Finding {
	if !strings.Contains(d.apiVersion, ".toolkit.fluxcd.io/") || d.patch {
		return nil
	}
	if d.isFluxKustomization() || d.kind == "HelmRelease" {
		// The gpufleet.io/startup annotation is a duration too.
		if v := scalar(d.node, "metadata", "annotations", v1alpha1.AnnotationStartup); v != "" {
			if _, err := fluxDuration(v); err != nil {
				return append(specDurations(d), durationFinding(d, keyLine(d.node, "metadata", "annotations", v1alpha1.AnnotationStartup), v1alpha1.AnnotationStartup, err))
			}
		}
	}
	return specDurations(d)
}

func specDurations(d *doc) []Finding {
	var out []Finding
	for _, key := range []string{"interval", "timeout", "retryInterval"} {
		n := lookup(d.node, "spec", key)
		if n == nil {
			if key == "interval" && required[d.kind] {
				out = append(out, Finding{File: d.file, Line: keyLine(d.node, "spec"), Severity: Error, Rule: "invalid-duration",
					Message: fmt.Sprintf("%s %s has no spec.interval, which the API server requires", d.kind, d.name), Fix: "set spec.interval, e.g. 10m"})
			}
			continue
		}
		if _, err := fluxDuration(n.Value); err != nil {
			out = append(out, durationFinding(d, keyLine(d.node, "spec", key), "spec."+key, err))
		}
	}
	return out
}

func durationFinding(d *doc, line int, field string, err error) Finding {
	return Finding{File: d.file, Line: line, Severity: Error, Rule: "invalid-duration",
		Message: fmt.Sprintf("%s %s: %s %v: the API server refuses it", d.kind, d.name, field, err),
		Fix:     "write it as Go durations without days or spaces, e.g. 30s, 10m, 2h"}
}
