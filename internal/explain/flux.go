package explain

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/config"
	"github.com/gpufleet/gpufleet/internal/gate"
	"github.com/gpufleet/gpufleet/internal/lint"
	"github.com/gpufleet/gpufleet/internal/render"
)

var (
	apiSource        = gvkGitRepository.GroupVersion().String()
	apiKustomization = gate.KindKustomization.GVK.GroupVersion().String()
	apiHelmRelease   = gate.KindHelmRelease.GVK.GroupVersion().String()
)

// fluxLinks are the links of a cluster on Flux: the GitRepository its
// Kustomizations apply from, then each Kustomization.
type fluxLinks struct{}

// observe reads the sources the Kustomizations name, and the
// Kustomizations they depend on that are not the cluster's own; Flux's
// bootstrap source where no Kustomization names one.
func (fluxLinks) observe(o *Observed, e gate.Expected, get getFunc) error {
	var err error
	for _, name := range e.Kustomizations {
		k := o.Kustomizations[name]
		if k == nil {
			continue
		}
		if ref := sourceOf(k); ref.Kind == "GitRepository" {
			key := ref.Namespace + "/" + ref.Name
			if _, done := o.Sources[key]; !done {
				if o.Sources[key], err = get(gvkGitRepository, ref.Namespace, ref.Name); err != nil {
					return err
				}
			}
		}
		for _, d := range dependsOn(k) {
			if d.Namespace == fluxNamespace && slices.Contains(e.Kustomizations, d.Name) {
				continue
			}
			key := d.Namespace + "/" + d.Name
			if _, done := o.Dependencies[key]; !done {
				if o.Dependencies[key], err = get(gate.KindKustomization.GVK, d.Namespace, d.Name); err != nil {
					return err
				}
			}
		}
	}
	if len(o.Sources) == 0 {
		// No Kustomization to name it: Flux's bootstrap source.
		if o.Sources[fluxNamespace+"/"+fluxNamespace], err = get(gvkGitRepository, fluxNamespace, fluxNamespace); err != nil {
			return err
		}
	}
	return nil
}

func (fluxLinks) links(w *walker) {
	w.sources()
	w.kustomizations()
}

// notApplied: each step has its Kustomization.
func (fluxLinks) notApplied(w *walker, step string) (string, bool) {
	if !w.stepNotOK(step) {
		return "", false
	}
	return "the " + step + " Kustomization, which applies it, is not ok", true
}

// applyCommand: Flux's reconcile of the step's Kustomization.
func (fluxLinks) applyCommand(step string) string {
	return "flux reconcile kustomization " + step + " --with-source"
}

// sourceRefs are the sources the cluster's Kustomizations name, in chain
// order; Flux's bootstrap source when none is read.
func (w *walker) sourceRefs() []ref {
	var out []ref
	for _, name := range w.e.Kustomizations {
		if k := w.o.Kustomizations[name]; k != nil {
			if r := sourceOf(k); r.Kind == "GitRepository" && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, ref{Kind: "GitRepository", Namespace: fluxNamespace, Name: fluxNamespace})
	}
	return out
}

// sources judges each GitRepository: there, not suspended, Ready, and at
// the expected revision.
func (w *walker) sources() {
	for _, r := range w.sourceRefs() {
		l := Link{Step: StepSource, Object: objectOf(apiSource, "GitRepository", r.Namespace, r.Name), Expected: "Ready, fetched " + cmp.Or(short(w.e.Revision), "the branch head")}
		u := w.o.Sources[r.Namespace+"/"+r.Name]
		fluxFlags := fmt.Sprintf("%s -n %s", r.Name, r.Namespace)
		switch {
		case u == nil:
			l.State, l.Observed = BrokenState, "missing"
			l.Message = fmt.Sprintf("GitRepository %s/%s does not exist: Flux is not bootstrapped on this cluster, or the Kustomizations name another source", r.Namespace, r.Name)
			l.Next = "flux get sources git -A"
			w.add(l)
			continue
		case suspended(u):
			l.Step, l.State, l.Observed = StepSuspended, BrokenState, "suspended"
			l.Message = "the GitRepository is suspended: Flux fetches nothing new until it is resumed"
			l.Next = "flux resume source git " + fluxFlags
			w.add(l)
			continue
		}
		artifact, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision")
		l.Observed = "fetched " + cmp.Or(short(artifact), "nothing")
		ready := condition(u, "Ready")
		switch {
		case ready == nil || ready.Status != "True":
			l.Condition = ready
			if inProgress(u) {
				l.State, l.Message, l.Next = InProgress, "source-controller is fetching: "+condMessage(ready), "flux get sources git "+fluxFlags
			} else {
				l.State, l.Message, l.Next = BrokenState, "source-controller cannot fetch the repository: "+condMessage(ready), fmt.Sprintf("kubectl -n %s describe gitrepository %s", r.Namespace, r.Name)
			}
		case w.e.Revision != "" && !strings.Contains(artifact, w.e.Revision):
			l.Step, l.State, l.Condition = StepRevision, BrokenState, ready
			branch, _, _ := unstructured.NestedString(u.Object, "spec", "ref", "branch")
			interval, _, _ := unstructured.NestedString(u.Object, "spec", "interval")
			l.Message = fmt.Sprintf("source-controller has fetched %s, not the expected %s: is it pushed to %s? Flux fetches every %s", cmp.Or(artifact, "nothing"), short(w.e.Revision), cmp.Or("branch "+branch, "the branch it follows"), cmp.Or(interval, "interval"))
			l.Next = "flux reconcile source git " + fluxFlags
		default:
			l.State = OK
		}
		w.add(l)
	}
}

// sourceBroken says a source link is not ok.
func (w *walker) sourceBroken() bool {
	for _, l := range w.a.Chain {
		if l.Object.Kind == "GitRepository" && l.State != OK {
			return true
		}
	}
	return false
}

// kustomizations judges each Kustomization of the cluster in chain order.
func (w *walker) kustomizations() {
	for _, name := range w.e.Kustomizations {
		l := w.kustomization(name)
		l.Checks = []gate.CheckID{gate.KustomizationCheck(name)}
		w.add(l)
	}
}

func (w *walker) kustomization(name string) Link {
	l := Link{Step: StepKustomization, Object: objectOf(apiKustomization, "Kustomization", fluxNamespace, name), Expected: "Ready at " + cmp.Or(short(w.e.Revision), "the source's revision")}
	check, ok := w.passed(gate.KustomizationCheck(name))
	l.Observed = check.Observed
	if ok {
		l.State = OK
		return l
	}
	k := w.o.Kustomizations[name]
	reconcile := "flux reconcile kustomization " + name + " --with-source"
	if k == nil {
		l.State, l.Observed = BrokenState, "missing"
		l.Message = fmt.Sprintf("the Kustomization does not exist: clusters/%s/kustomization.yaml lists it; has Flux applied the cluster's folder?", w.e.Cluster)
		l.Next = "flux reconcile kustomization flux-system --with-source"
		return l
	}
	if suspended(k) {
		l.Step, l.State, l.Observed = StepSuspended, BrokenState, "suspended"
		l.Message = "the Kustomization is suspended: Flux applies nothing of it, nor of what depends on it, until it is resumed"
		l.Next = "flux resume kustomization " + name
		return l
	}
	if dl, broken := w.dependencies(name, k); broken {
		return dl
	}
	ready := condition(k, "Ready")
	l.Condition = ready
	if ready != nil && ready.Status == "False" && isHealthCheckFailure(ready) {
		return w.healthCheck(l, name, k, ready)
	}
	if ready == nil || ready.Status != "True" {
		if inProgress(k) {
			if timeout, text := kustomizationTimeout(k); timeout > 0 {
				if startup, from := w.declaredStartup(name, k); startup > timeout {
					// It will time out before what it deploys can be up.
					l.Step, l.State = StepTimeout, BrokenState
					l.Expected, l.Observed = "spec.timeout at least "+startup.String(), "spec.timeout "+text
					l.Message = fmt.Sprintf("kustomize-controller is waiting for its health checks, but spec.timeout %s is shorter than the start-up time %s declared by %s: it will give up first. Render writes a timeout above the start-up: the Kustomization is stale or hand-edited", text, startup, from)
					l.Next = "gpufleet render --check"
					return l
				}
			}
			l.State, l.Message, l.Next = InProgress, "kustomize-controller is applying it: "+condMessage(ready), "flux get kustomization "+name
			return l
		}
		l.State, l.Message = BrokenState, "kustomize-controller could not apply it: "+condMessage(ready)
		l.Next = "flux events --for Kustomization/" + name + " -n " + fluxNamespace
		if ready != nil && ready.Reason == "DependencyNotReady" {
			l.Step, l.Next = StepDependsOn, "flux get kustomizations -n "+fluxNamespace
		}
		return l
	}
	if inProgress(k) {
		l.State, l.Message, l.Next = InProgress, "Ready, but kustomize-controller has not reconciled its latest spec yet", "flux get kustomization "+name
		return l
	}
	applied, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	l.Step, l.State = StepRevision, BrokenState
	l.Message = fmt.Sprintf("Ready, but applied %s, not the expected %s", cmp.Or(applied, "nothing"), short(w.e.Revision))
	l.Next = reconcile
	if w.sourceBroken() {
		l.State, l.Message = Blocked, l.Message+": its source has not fetched it either"
	}
	return l
}

// dependencies judges the dependsOn of Kustomization name. One of the
// cluster's own Kustomizations came earlier in the chain and was judged
// there; a dependency from elsewhere (another team's, or the serving
// stack's webhook) is judged here, as the link that holds name back.
func (w *walker) dependencies(name string, k *unstructured.Unstructured) (Link, bool) {
	for _, d := range dependsOn(k) {
		l := Link{Step: StepDependsOn, Object: objectOf(apiKustomization, "Kustomization", d.Namespace, d.Name), State: BrokenState, Expected: "Ready (" + name + " depends on it)"}
		if d.Namespace == fluxNamespace && slices.Contains(w.e.Kustomizations, d.Name) {
			if _, ok := w.passed(gate.KustomizationCheck(d.Name)); !ok {
				l.Message = fmt.Sprintf("%s waits for %s (dependsOn), which has not converged", name, d.Name)
				l.Next = "flux get kustomization " + d.Name
				if slices.Index(w.e.Kustomizations, d.Name) < slices.Index(w.e.Kustomizations, name) {
					// Judged earlier in the chain: its link says why.
					l.State, l.Object = Blocked, objectOf(apiKustomization, "Kustomization", fluxNamespace, name)
				}
				return l, true
			}
			continue
		}
		u := w.o.Dependencies[d.Namespace+"/"+d.Name]
		if u == nil {
			l.Observed = "missing"
			l.Message = fmt.Sprintf("%s depends on Kustomization %s/%s, which does not exist: Flux holds %s until it does", name, d.Namespace, d.Name, name)
			l.Next = "flux get kustomizations -A"
			return l, true
		}
		ready := condition(u, "Ready")
		if suspended(u) {
			l.Observed, l.Message, l.Next = "suspended", fmt.Sprintf("%s depends on %s, which is suspended", name, d.Name), fmt.Sprintf("flux resume kustomization %s -n %s", d.Name, d.Namespace)
			return l, true
		}
		if ready == nil || ready.Status != "True" {
			l.Condition, l.Observed = ready, "not Ready"
			l.Message = fmt.Sprintf("%s waits for %s (dependsOn), which is not Ready: %s", name, d.Name, condMessage(ready))
			l.Next = fmt.Sprintf("kubectl -n %s describe kustomization %s", d.Namespace, d.Name)
			if d.Name == render.WebhookKustomization {
				l.Next = lint.WebhookTokenCommand
			}
			return l, true
		}
	}
	return Link{}, false
}

// isHealthCheckFailure recognises kustomize-controller's verdict on health
// checks that did not pass within spec.timeout.
func isHealthCheckFailure(c *Condition) bool {
	return c.Reason == "HealthCheckFailed" || strings.Contains(c.Message, "timeout waiting for")
}

// healthCheck explains a failed health check: first whether the timeout
// is shorter than the start-up time declared for what it deploys (then no
// health check can ever pass), else the object it waited for.
func (w *walker) healthCheck(l Link, name string, k *unstructured.Unstructured, ready *Condition) Link {
	l.State = BrokenState
	timeout, timeoutText := kustomizationTimeout(k)
	startup, from := w.declaredStartup(name, k)
	if startup > 0 && timeout > 0 && timeout < startup {
		l.Step = StepTimeout
		l.Expected = "spec.timeout at least " + startup.String()
		l.Observed = "spec.timeout " + timeoutText
		l.Message = fmt.Sprintf("spec.timeout %s is shorter than the start-up time %s declared by %s: Flux gives up before it can be Ready (%s). The cluster does not run what render writes (it writes a timeout above the start-up): a stale or hand-edited Kustomization", timeoutText, startup, from, ready.Message)
		l.Next = "gpufleet render --check"
		return l
	}
	l.Step = StepHealthCheck
	l.Message = "health checks did not pass within spec.timeout " + cmp.Or(timeoutText, "(unset)") + ": " + ready.Message
	if startup > 0 {
		l.Message += fmt.Sprintf(" (start-up declared by %s: %s; if it takes longer, raise it in the fleet file)", from, startup)
	}
	l.Next = inspectWaitedFor(ready.Message, name)
	return l
}

// kustomizationTimeout is a Kustomization's spec.timeout, which defaults
// to its interval as in Flux, and its text; zero when unreadable.
func kustomizationTimeout(k *unstructured.Unstructured) (time.Duration, string) {
	text, _, _ := unstructured.NestedString(k.Object, "spec", "timeout")
	if text == "" {
		text, _, _ = unstructured.NestedString(k.Object, "spec", "interval")
	}
	d, _ := time.ParseDuration(text)
	return d, text
}

// declaredStartup is the start-up time declared for what Kustomization
// name deploys: the fleet file's service, else the annotation render puts
// on its Kustomization.
func (w *walker) declaredStartup(name string, k *unstructured.Unstructured) (time.Duration, string) {
	if w.f != nil && w.f.Stack != nil {
		for svc, s := range w.f.Stack.Services {
			if render.AppKustomization(svc) == name && s.StartupDuration > 0 {
				return s.StartupDuration, "service " + svc + " in the fleet file"
			}
		}
	}
	if v := k.GetAnnotations()[v1alpha1.AnnotationStartup]; v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d, "its " + v1alpha1.AnnotationStartup + " annotation"
		}
	}
	return 0, ""
}

// waitedFor matches the first object kustomize-controller names in
// "timeout waiting for: [Deployment/llm/vllm status: 'InProgress', …]".
var waitedFor = regexp.MustCompile(`\[?([A-Za-z]+)/([a-z0-9.-]+)(?:/([a-z0-9.-]+))? status: `)

// inspectWaitedFor is the command that shows the object a health check
// waited for, or the Kustomization's events when none is named.
func inspectWaitedFor(msg, kustomization string) string {
	m := waitedFor.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return "flux events --for Kustomization/" + kustomization + " -n " + fluxNamespace
	case m[3] == "":
		return fmt.Sprintf("kubectl describe %s %s", strings.ToLower(m[1]), m[2])
	default:
		return fmt.Sprintf("kubectl -n %s describe %s %s", m[2], strings.ToLower(m[1]), m[3])
	}
}

// operators judges the operators' HelmReleases, or in the manifests chart
// mode their Deployments.
func (w *walker) operators() {
	for _, key := range slices.Sorted(maps.Keys(w.e.HelmReleases)) {
		ns, name, _ := strings.Cut(key, "/")
		id := gate.HelmReleaseCheck(key)
		l := Link{Step: StepHelmRelease, Object: objectOf(apiHelmRelease, "HelmRelease", ns, name), Expected: "Ready at chart " + w.e.HelmReleases[key], Checks: []gate.CheckID{id}}
		check, ok := w.passed(id)
		l.Observed = check.Observed
		u := w.o.HelmReleases[key]
		switch {
		case ok:
			l.State = OK
		case u == nil:
			l.State, l.Message, l.Next = BrokenState, check.Message+": the operators step writes it", "flux reconcile kustomization operators --with-source"
			w.blockedBy(&l, "operators")
		case suspended(u):
			l.Step, l.State, l.Message, l.Next = StepSuspended, BrokenState, "the HelmRelease is suspended", fmt.Sprintf("flux resume helmrelease %s -n %s", name, ns)
		default:
			l.Condition = condition(u, "Ready")
			l.State, l.Message = BrokenState, "helm-controller: "+check.Message
			l.Next = fmt.Sprintf("flux events --for HelmRelease/%s -n %s", name, ns)
			if inProgress(u) {
				l.State = InProgress
			}
		}
		w.add(l)
	}
	for _, key := range slices.Sorted(maps.Keys(w.e.OperatorDeployments)) {
		ns, name, _ := strings.Cut(key, "/")
		id := gate.OperatorDeploymentCheck(key)
		l := Link{Step: StepOperator, Object: objectOf("apps/v1", "Deployment", ns, name), Expected: "Available, chart " + w.e.OperatorDeployments[key], Checks: []gate.CheckID{id}}
		check, ok := w.passed(id)
		l.Observed = check.Observed
		if ok {
			l.State = OK
		} else {
			l.State, l.Message, l.Next = BrokenState, check.Message, fmt.Sprintf("kubectl -n %s rollout status deployment/%s", ns, name)
			w.blockedBy(&l, "operators")
		}
		w.add(l)
	}
}

// controllerLink is gpufleet-controller's Deployment, where render
// installs it (Expected.ControllerImage): part of the operators step, so a
// DriverRollout is driven by the release's version only once it is
// Available.
func (w *walker) controllerLink() {
	if w.e.ControllerImage == "" {
		return
	}
	id := gate.ControllerCheck()
	l := Link{Step: StepOperator, Object: objectOf("apps/v1", "Deployment", config.Namespace, config.Deployment), Expected: "Available, " + w.e.ControllerImage, Checks: []gate.CheckID{id}}
	check, ok := w.passed(id)
	l.Observed = check.Observed
	if ok {
		l.State = OK
	} else {
		l.State, l.Message, l.Next = BrokenState, check.Message, fmt.Sprintf("kubectl -n %s rollout status deployment/%s", config.Namespace, config.Deployment)
		w.blockedBy(&l, "operators")
	}
	w.add(l)
}

func condMessage(c *Condition) string {
	if c == nil {
		return "no Ready condition yet"
	}
	return cmp.Or(c.Message, c.Reason)
}
