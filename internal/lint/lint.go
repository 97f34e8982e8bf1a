package lint

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Options tune the checks.
type Options struct {
	// ApplyTime is the time one apply takes, for the drift-repair table.
	ApplyTime time.Duration
}

// AnnotationStartup declares how long what a Kustomization deploys takes to
// become healthy, when no startup probe says it.
const AnnotationStartup = "gpufleet.io/startup"

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
		if f, ok := plaintextSecret(d); ok {
			rep.Findings = append(rep.Findings, f)
		}
	}
	ks := fluxKustomizations(r)
	rep.Findings = append(rep.Findings, checkKustomizations(r, ks)...)
	for _, k := range ks {
		interval := k.interval
		rep.Drift = append(rep.Drift, Drift{
			Kustomization: k.id(), File: k.doc.file, Interval: interval,
			Mean: interval/2 + opts.ApplyTime, Worst: interval + opts.ApplyTime,
		})
	}
	rep.sort()
	return rep, nil
}

// plaintextSecret reports a Secret with data that SOPS did not encrypt.
func plaintextSecret(d *doc) (Finding, bool) {
	if d.kind != "Secret" || d.apiVersion != "v1" || lookup(d.node, "sops") != nil {
		return Finding{}, false
	}
	for _, key := range []string{"data", "stringData"} {
		if v := lookup(d.node, key); v != nil && len(v.Content) > 0 {
			return Finding{
				File: d.file, Line: keyLine(d.node, key), Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("Secret %s holds %s in plaintext", d.name, key),
				Fix:     "encrypt it with SOPS (`gpufleet secret encrypt`), and delete the plaintext from Git history",
			}, true
		}
	}
	return Finding{}, false
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
		if !d.isFluxKustomization() {
			continue
		}
		k := &kustomization{doc: d, scope: scopeOf(d.file), ns: cmpOr(d.namespace, "default"), name: d.name}
		k.interval, _ = time.ParseDuration(scalar(d.node, "spec", "interval"))
		if t := scalar(d.node, "spec", "timeout"); t != "" {
			k.timeout, _ = time.ParseDuration(t)
			k.hasTimeout = true
		} else {
			// Flux's default timeout is the interval.
			k.timeout = k.interval
		}
		hc := lookup(d.node, "spec", "healthChecks")
		k.waits = scalar(d.node, "spec", "wait") == "true" || (hc != nil && len(hc.Content) > 0) ||
			// Not waiting on purpose, with the reason written down.
			strings.TrimSpace(scalar(d.node, "metadata", "annotations", AnnotationNoWait)) != ""
		k.path = strings.TrimPrefix(path.Clean("/"+scalar(d.node, "spec", "path")), "/")
		if deps := lookup(d.node, "spec", "dependsOn"); deps != nil {
			k.dependsOnLine = keyLine(d.node, "spec", "dependsOn")
			for _, dep := range deps.Content {
				k.dependsOn = append(k.dependsOn, k.scope+cmpOr(scalar(dep, "namespace"), k.ns)+"/"+scalar(dep, "name"))
			}
		}
		k.startup = scalar(d.node, "metadata", "annotations", AnnotationStartup)
		k.startupFrom = "its " + AnnotationStartup + " annotation"
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
		if startup > 0 && k.timeout < startup {
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
// applies. It also reports resources a kustomization.yaml lists that are missing.
func declaredStartup(r *repo, k *kustomization) (time.Duration, string, []Finding) {
	var best time.Duration
	var from string
	var findings []Finding
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		kf := path.Join(dir, "kustomization.yaml")
		docs, ok := r.files[kf]
		if !ok {
			// No kustomization.yaml: Flux applies every manifest below.
			for file, ds := range r.files {
				if strings.HasPrefix(file, dir+"/") || dir == "." {
					best, from = longer(best, from, ds)
				}
			}
			return
		}
		res := lookup(docs[0].node, "resources")
		if res == nil {
			return
		}
		for _, item := range res.Content {
			p := path.Clean(path.Join(dir, item.Value))
			switch {
			case r.files[p] != nil:
				best, from = longer(best, from, r.files[p])
			case r.isDir(p):
				walk(p)
			case strings.Contains(item.Value, "://"):
			default:
				findings = append(findings, Finding{File: kf, Line: item.Line, Severity: Error, Rule: "missing-resource", Message: fmt.Sprintf("resource %s is listed but missing", item.Value), Fix: "add the file (an encrypted Secret: `gpufleet secret encrypt`) or remove the entry"})
			}
		}
	}
	walk(cmpOr(k.path, "."))
	if k.startup != "" {
		// The annotation declares it outright, overriding probes.
		if d, err := time.ParseDuration(k.startup); err == nil {
			return d, k.startupFrom, findings
		}
	}
	return best, from, findings
}

func (r *repo) isDir(p string) bool {
	for file := range r.files {
		if strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
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
		containers := lookup(d.node, "spec", "template", "spec", "containers")
		if containers == nil {
			continue
		}
		for _, c := range containers.Content {
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
