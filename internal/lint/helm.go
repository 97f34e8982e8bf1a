package lint

import (
	"cmp"
	"fmt"
	"strings"
)

// checkHelmReleases reports a HelmRelease dependsOn a HelmRelease no file
// defines: helm-controller then never installs it ("dependency not
// found"). A dependency's namespace defaults to the HelmRelease's own; a
// HelmRelease without a namespace (its Kustomization sets it) matches by
// name.
func checkHelmReleases(r *repo) []Finding {
	type key struct{ ns, name string }
	defined := map[key]bool{}
	names := map[string]bool{}
	var hrs []*doc
	for _, d := range r.docs {
		if d.kind != "HelmRelease" || !strings.HasPrefix(d.apiVersion, "helm.toolkit.fluxcd.io/") || d.patch {
			continue
		}
		hrs = append(hrs, d)
		defined[key{d.namespace, d.name}] = true
		names[d.name] = true
	}
	var out []Finding
	for _, d := range hrs {
		for _, dep := range items(lookup(d.node, "spec", "dependsOn")) {
			name, ns := scalar(dep, "name"), cmp.Or(scalar(dep, "namespace"), d.namespace)
			found := defined[key{ns, name}] || defined[key{"", name}] || (ns == "" && names[name])
			if !found {
				out = append(out, Finding{File: d.file, Line: dep.Line, Severity: Error, Rule: "depends-on-missing",
					Message: fmt.Sprintf("HelmRelease %s: dependsOn %s, which no file in the repository defines", d.name, strings.TrimPrefix(ns+"/"+name, "/")),
					Fix:     "fix the name or namespace, or add the HelmRelease"})
			}
		}
	}
	return out
}
