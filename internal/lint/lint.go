package lint

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Options tune the checks.
type Options struct {
	// ApplyTime is the time one apply takes, for the drift-repair table.
	ApplyTime time.Duration
}

// Run lints the repository at root.

// AnnotationNoWait on a Flux Kustomization says why it deliberately does
// not wait for its objects' health; lint then does not report it as a
// dependency nobody waits for.
const AnnotationNoWait = "lint.gpufleet.io/no-wait"

func Run(root string, opts Options) (*Report, error) {
	r, findings, err := load(root)
	if err != nil {
		return nil, err
	}
	rep := &Report{Findings: findings}
	for _, d := range r.docs {
		rep.Findings = append(rep.Findings, plaintextSecret(d)...)
		rep.Findings = append(rep.Findings, checkDurations(d)...)
		if d.isFluxKustomization() {
			rep.Findings = append(rep.Findings, fluxPatchSecrets(d)...)
		}
	}
	for file, docs := range r.files {
		if isKustomizationFile(file) {
			rep.Findings = append(rep.Findings, r.kustomizationSecrets(file, docs[0])...)
		}
	}
	ks := fluxKustomizations(r)
	rep.Findings = append(rep.Findings, checkKustomizations(r, ks)...)
	rep.Findings = append(rep.Findings, checkHelmReleases(r)...)
	for _, k := range ks {
		interval := k.interval
		if interval <= 0 {
			// Missing or invalid: reported as invalid-duration, no drift to tell.
			continue
		}
		rep.Drift = append(rep.Drift, Drift{
			Kustomization: k.id(), File: k.doc.file, Interval: interval,
			Mean: interval/2 + opts.ApplyTime, Worst: interval + opts.ApplyTime,
		})
	}
	rep.sort()
	return rep, nil
}

// kustomization is a Flux Kustomization with what lint needs of it.
type kustomization struct {
	doc                  *doc
	scope, ns, name      string
	interval, timeout    time.Duration
	hasTimeout, waits    bool
	dependsOn            []string // ids
	dependsOnLine        int
	path                 string
	startup, startupFrom string
	// ownSource: spec.sourceRef is this repository, so spec.path must
	// exist in it.
	ownSource bool
}

func (k *kustomization) id() string { return k.scope + k.ns + "/" + k.name }

// scopeOf groups objects by cluster: in clusters/<name>/... each cluster's
// Kustomizations are separate objects even with equal names.
func scopeOf(file string) string {
	parts := strings.Split(file, "/")
	if len(parts) > 2 && parts[0] == "clusters" {
		return "clusters/" + parts[1] + ":"
	}
	return ""
}

func fluxKustomizations(r *repo) []*kustomization {
	var ks []*kustomization
	for _, d := range r.docs {
		if !d.isFluxKustomization() || d.patch {
			// A patch file only changes a Kustomization defined elsewhere.
			continue
		}
		k := &kustomization{doc: d, scope: scopeOf(d.file), ns: cmp.Or(d.namespace, "default"), name: d.name}
		// An invalid duration reads as 0 here and is reported by checkDurations.
		k.interval, _ = fluxDuration(scalar(d.node, "spec", "interval"))
		if t := scalar(d.node, "spec", "timeout"); t != "" {
			k.timeout, _ = fluxDuration(t)
			k.hasTimeout = true
		} else {
			// Flux's default timeout is the interval.
			k.timeout = k.interval
		}
		k.waits = scalar(d.node, "spec", "wait") == "true" || len(items(lookup(d.node, "spec", "healthChecks"))) > 0 ||
			// Not waiting on purpose, with the reason written down.
			strings.TrimSpace(scalar(d.node, "metadata", "annotations", AnnotationNoWait)) != ""
		k.path = strings.TrimPrefix(path.Clean("/"+scalar(d.node, "spec", "path")), "/")
		k.ownSource = ownSource(d)
		if deps := lookup(d.node, "spec", "dependsOn"); deps != nil {
			k.dependsOnLine = keyLine(d.node, "spec", "dependsOn")
			for _, dep := range items(deps) {
				k.dependsOn = append(k.dependsOn, k.scope+cmp.Or(scalar(dep, "namespace"), k.ns)+"/"+scalar(dep, "name"))
			}
		}
		k.startup = scalar(d.node, "metadata", "annotations", v1alpha1.AnnotationStartup)
		k.startupFrom = "its " + v1alpha1.AnnotationStartup + " annotation"
		ks = append(ks, k)
	}
	return ks
}

func checkKustomizations(r *repo, ks []*kustomization) []Finding {
	var out []Finding
	byID := map[string]*kustomization{}
	for _, k := range ks {
		byID[k.id()] = k
	}
	dependedOn := map[string][]string{}
	for _, k := range ks {
		at := func(sev Severity, rule string, line int, msg, fix string) {
			out = append(out, Finding{File: k.doc.file, Line: line, Severity: sev, Rule: rule, Message: fmt.Sprintf("Kustomization %s: %s", k.name, msg), Fix: fix})
		}
		if scalar(k.doc.node, "spec", "prune") != "true" {
			at(Warning, "prune-off", keyLine(k.doc.node, "spec", "prune"), "prune is off: objects removed from Git stay in the cluster", "set spec.prune: true")
		}
		if k.ownSource && k.path != "" && k.path != "." && !r.isDir(k.path) {
			at(Error, "path-missing", keyLine(k.doc.node, "spec", "path"), fmt.Sprintf("spec.path %s is not a folder of the repository: the Kustomization fails to build", scalar(k.doc.node, "spec", "path")), "fix the path, or add the folder")
		}
		if k.interval > 0 && k.interval < time.Minute {
			at(Warning, "short-interval", keyLine(k.doc.node, "spec", "interval"), fmt.Sprintf("interval %s is below one minute: it loads the API server and the source for little gain", k.interval), "use 1m or more, and a push Receiver for fast delivery")
		}
		for _, dep := range k.dependsOn {
			if _, ok := byID[dep]; !ok {
				at(Error, "depends-on-missing", k.dependsOnLine, fmt.Sprintf("dependsOn %s, which no file in the repository defines", strings.TrimPrefix(dep, k.scope)), "fix the name or namespace, or add the Kustomization")
			}
			dependedOn[dep] = append(dependedOn[dep], k.name)
		}
		startup, from, objs := declaredStartup(r, k)
		out = append(out, objs...)
		if startup > 0 && k.timeout > 0 && k.timeout < startup {
			what := "timeout"
			if !k.hasTimeout {
				what = "timeout (the interval, as none is set)"
			}
			at(Error, "timeout-below-startup", keyLine(k.doc.node, "spec", "timeout"), fmt.Sprintf("%s %s is shorter than the start-up time %s declared by %s", what, k.timeout, startup, from), fmt.Sprintf("set spec.timeout to at least %s", (startup+startup/2).Round(time.Minute)))
		}
	}
	for _, k := range ks {
		if users := dependedOn[k.id()]; len(users) > 0 && !k.waits {
			out = append(out, Finding{File: k.doc.file, Line: keyLine(k.doc.node, "spec"), Severity: Warning, Rule: "no-wait", Message: fmt.Sprintf("Kustomization %s is a dependency of %s but neither waits nor has health checks: they start before it is healthy", k.name, strings.Join(users, ", ")), Fix: "set spec.wait: true or list spec.healthChecks"})
		}
	}
	if cycle := dependencyCycle(ks, byID); cycle != nil {
		k := byID[cycle[0]]
		var names []string
		for _, id := range cycle {
			names = append(names, byID[id].name)
		}
		out = append(out, Finding{File: k.doc.file, Line: k.dependsOnLine, Severity: Error, Rule: "depends-on-cycle", Message: "dependsOn cycle: " + strings.Join(names, " → "), Fix: "remove one dependsOn of the cycle"})
	}
	return out
}

// declaredStartup is the longest start-up time declared for what k
// deploys: its annotation, or the startup probes of the workloads it
// applies. It also reports what the kustomization files it builds refer to
// and is missing, and plaintext they generate.
func declaredStartup(r *repo, k *kustomization) (time.Duration, string, []Finding) {
	var best time.Duration
	var from string
	applied, findings := r.build(cmp.Or(k.path, "."))
	for _, file := range applied {
		best, from = longer(best, from, r.files[file])
	}
	if k.startup != "" {
		// The annotation declares it outright, overriding probes.
		if d, err := fluxDuration(k.startup); err == nil {
			return d, k.startupFrom, findings
		}
	}
	return best, from, findings
}

// longer returns the longer of best and the start-up a workload in docs
// declares through its startup probe.
func longer(best time.Duration, from string, docs []*doc) (time.Duration, string) {
	for _, d := range docs {
		switch d.kind {
		case "Deployment", "StatefulSet", "DaemonSet":
		default:
			continue
		}
		for _, c := range items(lookup(d.node, "spec", "template", "spec", "containers")) {
			probe := lookup(c, "startupProbe")
			if probe == nil {
				continue
			}
			s := seconds(probe, "initialDelaySeconds", 0) + seconds(probe, "failureThreshold", 3)*seconds(probe, "periodSeconds", 10)
			if t := time.Duration(s) * time.Second; t > best {
				best, from = t, fmt.Sprintf("the startup probe of %s/%s", strings.ToLower(d.kind), d.name)
			}
		}
	}
	return best, from
}

func seconds(n *yaml.Node, key string, def int) int {
	if v, err := strconv.Atoi(scalar(n, key)); err == nil {
		return v
	}
	return def
}

// dependencyCycle returns one cycle of dependsOn, first id repeated last.
func dependencyCycle(ks []*kustomization, byID map[string]*kustomization) []string {
	state := map[string]int{}
	var stack []string
	var found []string
	var visit func(id string) bool
	visit = func(id string) bool {
		state[id] = 1
		stack = append(stack, id)
		for _, dep := range byID[id].dependsOn {
			if _, ok := byID[dep]; !ok {
				continue
			}
			if state[dep] == 1 {
				found = append(slices.Clone(stack[slices.Index(stack, dep):]), dep)
				return true
			}
			if state[dep] == 0 && visit(dep) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = 2
		return false
	}
	ids := make([]string, 0, len(ks))
	for _, k := range ks {
		ids = append(ids, k.id())
	}
	slices.Sort(ids)
	for _, id := range ids {
		if state[id] == 0 && visit(id) {
			return found
		}
	}
	return nil
}

// ownSource tells whether a Flux Kustomization's source is the repository
// being linted: the GitRepository flux bootstrap names flux-system (and
// gpufleet renders). A tenant's Kustomization reads another repository,
// whose paths lint cannot see.
func ownSource(d *doc) bool {
	ref := lookup(d.node, "spec", "sourceRef")
	return scalar(ref, "kind") == "GitRepository" && scalar(ref, "name") == "flux-system" &&
		cmp.Or(scalar(ref, "namespace"), cmp.Or(d.namespace, "flux-system")) == "flux-system"
}
