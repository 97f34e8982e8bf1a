package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/planner"
	pt "github.com/gpufleet/gpufleet/internal/planner/plannertest"
)

// draStep is one pass over a single DRA node: what it looked like, and
// what the planner must do with it.
type draStep struct {
	name   string
	node   *pt.NodeBuilder
	want   []string // moved(): "node From→To"
	plugin planner.PluginMove
	driver string
	reason string // a part of the one transition's reason
}

func runDRASteps(t *testing.T, ro *pt.RolloutBuilder, steps []draStep) {
	t.Helper()
	for _, s := range steps {
		r := planOnce(ro, []*pt.NodeBuilder{s.node})
		if diff := cmp.Diff(s.want, moved(r)); diff != "" {
			t.Errorf("%s: transitions (-want +got):\n%s", s.name, diff)
			continue
		}
		if len(r.Transitions) == 0 {
			continue
		}
		tr := r.Transitions[0]
		if tr.Plugin != s.plugin || tr.Driver != s.driver {
			t.Errorf("%s: plugin %d, driver %q; want plugin %d, driver %q", s.name, tr.Plugin, tr.Driver, s.plugin, s.driver)
		}
		if !strings.Contains(tr.Reason, s.reason) {
			t.Errorf("%s: reason %q does not say %q", s.name, tr.Reason, s.reason)
		}
	}
}

// TestDRASwapOrder: on a DRA node the workloads go and their claims are
// released, then the plugin is stopped, then the driver label moves; the
// plugin comes back once the new driver is Ready, and the node soaks only
// once the plugin is Ready and its ResourceSlices publish the new version.
// Done lets the plugin label go.
func TestDRASwapOrder(t *testing.T) {
	since := now.Add(-time.Minute)
	node := func(ph v1alpha1.NodePhase) *pt.NodeBuilder {
		return pt.Node("n").In(ph, since).DRA(pt.Previous)
	}
	runDRASteps(t, pt.Rollout("r"), []draStep{
		{name: "pods still there", node: node(v1alpha1.NodeDraining), want: []string{}},
		{name: "pods gone, claim still allocated", node: node(v1alpha1.NodeDraining).Drained().Claims("ml/train-0"), want: []string{}},
		{name: "claims released: the plugin is stopped first", node: node(v1alpha1.NodeDraining).Drained(),
			want: []string{"n Draining→Draining"}, plugin: planner.PluginPause, reason: "stopping the DRA kubelet plugin before the driver swap"},
		{name: "plugin told to stop, still running", node: node(v1alpha1.NodeDraining).Drained().Plugin(v1alpha1.DRAPluginPaused, true, false), want: []string{}},
		{name: "plugin gone: the driver label moves", node: node(v1alpha1.NodeDraining).Drained().Plugin(v1alpha1.DRAPluginPaused, false, false),
			want: []string{"n Draining→Installing"}, driver: pt.Target, reason: "installing driver " + pt.Target},
		{name: "new driver not Ready: the plugin stays stopped", node: node(v1alpha1.NodeInstalling).Plugin(v1alpha1.DRAPluginPaused, false, false).Driver(false, ""), want: []string{}},
		{name: "new driver Ready: the plugin comes back", node: node(v1alpha1.NodeInstalling).Plugin(v1alpha1.DRAPluginPaused, false, false).Driver(true, pt.Target),
			want: []string{"n Installing→Validating"}, plugin: planner.PluginResume, reason: "letting the DRA kubelet plugin back"},
		{name: "plugin not Ready yet", node: node(v1alpha1.NodeValidating).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, true, false), want: []string{}},
		{name: "plugin Ready, slices still of the old driver", node: node(v1alpha1.NodeValidating).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, true, true), want: []string{}},
		{name: "slices republished", node: pt.Node("n").In(v1alpha1.NodeValidating, since).DRA(pt.Target).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, true, true),
			want: []string{"n Validating→Soaking"}, reason: "ResourceSlices publish driverVersion 580.95.5"},
		{name: "soaked: the plugin label goes", node: pt.Node("n").In(v1alpha1.NodeSoaking, now.Add(-time.Hour)).DRA(pt.Target).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, true, true),
			want: []string{"n Soaking→Done"}, plugin: planner.PluginRelease},
	})
}

// TestDRAPlainNodeUnchanged: a node with no DRA plugin goes from its drain
// to its install at once, and nothing touches a plugin.
func TestDRAPlainNodeUnchanged(t *testing.T) {
	runDRASteps(t, pt.Rollout("r"), []draStep{
		{name: "drained", node: pt.Node("n").In(v1alpha1.NodeDraining, now.Add(-time.Minute)).Drained(),
			want: []string{"n Draining→Installing"}, driver: pt.Target},
		{name: "validated", node: pt.Node("n").In(v1alpha1.NodeValidating, now.Add(-time.Minute)).Driver(true, pt.Target),
			want: []string{"n Validating→Soaking"}},
	})
}

// TestDRAClaimNeverReleases: a claim still allocated at the drain timeout
// fails the node, naming the claim; the plugin, needed to unprepare it,
// is left running, and the driver label goes back to what it was.
func TestDRAClaimNeverReleases(t *testing.T) {
	ro := pt.Rollout("r").Timeouts(10*time.Minute, time.Hour, time.Hour)
	runDRASteps(t, ro, []draStep{
		{name: "within the timeout", node: pt.Node("n").In(v1alpha1.NodeDraining, now.Add(-9*time.Minute)).DRA(pt.Previous).Drained().Claims("ml/train-0"), want: []string{}},
		{name: "at the timeout", node: pt.Node("n").In(v1alpha1.NodeDraining, now.Add(-10*time.Minute)).DRA(pt.Previous).Drained().Claims("ml/train-0"),
			want: []string{"n Draining→RollingBack failure"}, driver: pt.Previous, reason: "drain did not finish within 10m: claim ml/train-0 still allocated"},
		{name: "many claims, pods left too", node: pt.Node("n").In(v1alpha1.NodeDraining, now.Add(-10*time.Minute)).DRA(pt.Previous).Claims("a/1", "a/2", "a/3", "a/4"),
			want: []string{"n Draining→RollingBack failure"}, driver: pt.Previous, reason: "claims a/1, a/2, a/3 and 1 more still allocated"},
		{name: "a plugin that never stops", node: pt.Node("n").In(v1alpha1.NodeDraining, now.Add(-10*time.Minute)).DRA(pt.Previous).Drained().Plugin(v1alpha1.DRAPluginPaused, true, false),
			want: []string{"n Draining→RollingBack failure"}, driver: pt.Previous, reason: "the DRA kubelet plugin still running"},
	})
}

// TestDRAValidateTimeout: a plugin that never comes back, or slices never
// republished, fail the node at the validate timeout, saying which.
func TestDRAValidateTimeout(t *testing.T) {
	ro := pt.Rollout("r").Timeouts(time.Hour, time.Hour, 10*time.Minute)
	at := now.Add(-10 * time.Minute)
	runDRASteps(t, ro, []draStep{
		{name: "plugin never Ready", node: pt.Node("n").In(v1alpha1.NodeValidating, at).DRA(pt.Previous).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, false, false),
			want: []string{"n Validating→RollingBack failure"}, driver: pt.Previous, plugin: planner.PluginPause, reason: "DRA kubelet plugin not Ready"},
		{name: "slices never republished", node: pt.Node("n").In(v1alpha1.NodeValidating, at).DRA(pt.Previous).Driver(true, pt.Target).Plugin(v1alpha1.DRAPluginResumed, true, true),
			want: []string{"n Validating→RollingBack failure"}, driver: pt.Previous, plugin: planner.PluginPause, reason: "ResourceSlices publish driverVersion 570.172.8, want 580.95.5"},
	})
}

// TestDRAPauseKeepsDrainStart: stopping the plugin mid-drain keeps the
// drain's start, so the drain timeout bounds the whole of it; every other
// move starts its phase anew.
func TestDRAPauseKeepsDrainStart(t *testing.T) {
	since := now.Add(-time.Hour)
	s := v1alpha1.NodeState{Rollout: "r", Phase: v1alpha1.NodeDraining, Since: since}
	pause := planner.Transition{Node: "n", From: v1alpha1.NodeDraining, To: v1alpha1.NodeDraining, Plugin: planner.PluginPause}
	if got, _ := pause.Next(s, true, "r", now); !got.Since.Equal(since) {
		t.Errorf("pause moved the drain's start to %s", got.Since)
	}
	install := planner.Transition{Node: "n", From: v1alpha1.NodeDraining, To: v1alpha1.NodeInstalling}
	if got, _ := install.Next(s, true, "r", now); !got.Since.Equal(now) {
		t.Errorf("install kept since %s", got.Since)
	}
}

// TestDRAComputeDomainsMoveAsOne: with the ComputeDomain label as the
// maintenance domain, the nodes whose claims are of one ComputeDomain
// start as one, label or not, and each start records the domain.
func TestDRAComputeDomainsMoveAsOne(t *testing.T) {
	ro := pt.Rollout("r").Parallel(4).MaxUnavailable(4).Domains(v1alpha1.LabelComputeDomain, 3)
	nodes := []*pt.NodeBuilder{
		pt.Node("a").DRA(pt.Previous).ComputeDomain("cd-1").GPUWork(1, 1),
		pt.Node("b").DRA(pt.Previous).GPUWork(1, 5),
		pt.Node("c").DRA(pt.Previous).ComputeDomain("cd-1").Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous, v1alpha1.LabelComputeDomain, "cd-1").GPUWork(1, 1),
		pt.Node("d").DRA(pt.Previous).Labels(v1alpha1.LabelPool, pt.Pool, v1alpha1.LabelDriver, pt.Previous, v1alpha1.LabelComputeDomain, "cd-1").GPUWork(1, 1),
	}
	r := planOnce(ro.Parallel(3).MaxUnavailable(3), nodes)
	want := []string{"a Pending→Draining", "c Pending→Draining", "d Pending→Draining"}
	if diff := cmp.Diff(want, moved(r)); diff != "" {
		t.Fatalf("transitions (-want +got):\n%s", diff)
	}
	for _, tr := range r.Transitions {
		if tr.ComputeDomain != "cd-1" || !strings.Contains(tr.Reason, "maintenance domain cd-1 (3 nodes, starting as one)") {
			t.Errorf("%s: domain %q, reason %q", tr.Node, tr.ComputeDomain, tr.Reason)
		}
	}
	// A node label domain records nothing.
	r = planOnce(pt.Rollout("r").Parallel(4).MaxUnavailable(4).Domains(pt.CliqueLabel, 4), []*pt.NodeBuilder{pt.Node("a").InDomain("x")})
	if len(r.Transitions) != 1 || r.Transitions[0].ComputeDomain != "" {
		t.Errorf("label domain: %+v", r.Transitions)
	}
}

// TestDRAComputeDomainReturnsAsOne: a node of a ComputeDomain whose claims
// and label went with its drain is still held by the domain recorded at
// its start: it does not return while the rest is in flight.
func TestDRAComputeDomainReturnsAsOne(t *testing.T) {
	ro := pt.Rollout("r").Parallel(2).MaxUnavailable(2).Domains(v1alpha1.LabelComputeDomain, 2).Soak(time.Minute)
	soaked := pt.Node("a").In(v1alpha1.NodeSoaking, now.Add(-time.Hour)).Driver(true, pt.Target).ComputeDomain("cd-1")
	r := planOnce(ro, []*pt.NodeBuilder{soaked, pt.Node("b").In(v1alpha1.NodeValidating, now).ComputeDomain("cd-1")})
	if got := moved(r); len(got) != 0 {
		t.Errorf("a node returned while its ComputeDomain was in flight: %v", got)
	}
	r = planOnce(ro, []*pt.NodeBuilder{soaked, pt.Node("b").In(v1alpha1.NodeSoaking, now.Add(-time.Hour)).Driver(true, pt.Target).ComputeDomain("cd-1")})
	if diff := cmp.Diff([]string{"a Soaking→Done", "b Soaking→Done"}, moved(r)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// claimSet is a Claims of fixed counts by "namespace/name".
type claimSet map[string]int

func (c claimSet) GPUs(ns, name string) int { return c[ns+"/"+name] }

// TestHoldsGPUByClaim: a pod holds a GPU through DRA when a claim of it,
// named or made from a template (its status names it), has a device of a
// GPU DRA driver; a NIC claim alone, or a claim not allocated yet, holds
// none; with the claims unknown, any claim is taken for a GPU.
func TestHoldsGPUByClaim(t *testing.T) {
	pod := func(claims []corev1.PodResourceClaim, status []corev1.PodResourceClaimStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p"},
			Spec: corev1.PodSpec{ResourceClaims: claims}, Status: corev1.PodStatus{ResourceClaimStatuses: status}}
	}
	named := func(claim string) []corev1.PodResourceClaim {
		return []corev1.PodResourceClaim{{Name: "c", ResourceClaimName: new(claim)}}
	}
	tmpl := []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("one-gpu")}}
	claims := claimSet{"ml/gpu-claim": 1, "ml/p-gpu-x7": 2, "ml/nic-claim": 0}
	for _, tt := range []struct {
		name   string
		pod    *corev1.Pod
		claims planner.Claims
		want   bool
	}{
		{"a GPU claim", pod(named("gpu-claim"), nil), claims, true},
		{"a NIC claim only", pod(named("nic-claim"), nil), claims, false},
		{"a template's claim, by the pod's status", pod(tmpl, []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: new("p-gpu-x7")}}), claims, true},
		{"a template's claim not made yet", pod(tmpl, nil), claims, false},
		{"claims unknown", pod(named("nic-claim"), nil), nil, true},
		{"no claim", pod(nil, nil), claims, false},
	} {
		if got := planner.HoldsGPU(tt.pod, nil, tt.claims); got != tt.want {
			t.Errorf("%s: HoldsGPU %t, want %t", tt.name, got, tt.want)
		}
	}
	c := &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Driver: "gpu.nvidia.com"}, {Driver: "dra.net"}, {Driver: "compute-domain.nvidia.com"}},
	}}}}
	if got := planner.GPUDevices(c, v1alpha1.DefaultDRADrivers); got != 2 {
		t.Errorf("GPUDevices: %d, want 2", got)
	}
	if got := planner.GPUDevices(&resourcev1.ResourceClaim{}, v1alpha1.DefaultDRADrivers); got != 0 {
		t.Errorf("GPUDevices of a claim not allocated: %d", got)
	}
}

// TestSlicesOn: a slice's driverVersion is the driver version in semver
// form; every one the node publishes must be the target's.
func TestSlicesOn(t *testing.T) {
	for _, tt := range []struct {
		published []string
		target    string
		want      bool
	}{
		{[]string{"580.95.5"}, "580.95.05", true},
		{[]string{"580.95.5", "570.172.8"}, "580.95.05", false},
		{nil, "580.95.05", false},
		{[]string{"570.86.15"}, "570", true},
		{[]string{"575.51.2"}, "570", false},
	} {
		if got := planner.SlicesOn(tt.published, tt.target); got != tt.want {
			t.Errorf("SlicesOn(%v, %s) = %t", tt.published, tt.target, got)
		}
	}
	if got := planner.SemverForm("580.95.05"); got != "580.95.5" {
		t.Errorf("SemverForm: %s", got)
	}
}

// TestDRAWaitOf: what explain says of a node in its DRA steps.
func TestDRAWaitOf(t *testing.T) {
	paused := map[string]string{v1alpha1.LabelDRAPlugin: v1alpha1.DRAPluginPaused}
	resumed := map[string]string{v1alpha1.LabelDRAPlugin: v1alpha1.DRAPluginResumed}
	for _, tt := range []struct {
		ph     v1alpha1.NodePhase
		labels map[string]string
		want   string
	}{
		{v1alpha1.NodeDraining, paused, "its DRA kubelet plugin to stop"},
		{v1alpha1.NodeInstalling, paused, "stays stopped"},
		{v1alpha1.NodeValidating, resumed, "publish driverVersion 580.95.5"},
		{v1alpha1.NodeValidating, nil, ""},
	} {
		got := planner.DRAWaitOf(tt.ph, tt.labels, pt.Target)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s %v: %q, want %q", tt.ph, tt.labels, got, tt.want)
		}
	}
}
