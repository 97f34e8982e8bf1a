package testbed

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKubeRunsPods proves the controller-manager, the scheduler and kwok
// are real and work together: a Deployment gets a ReplicaSet and pods, the
// scheduler binds them to the system node, kwok runs them to Ready, the
// disruption controller computes a PodDisruptionBudget, and an eviction it
// does not allow is refused with 429 while one it allows goes through and
// is replaced.
func TestKubeRunsPods(t *testing.T) {
	tb := New(t, Options{Kube: true, Kwok: true})
	c := tb.Clusters()[0]
	ctx := t.Context()

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{PodReadyAfterAnnotation: "2s"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := c.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pods := waitPods(ctx, t, c, labels, 2, func(p *corev1.Pod) bool { return p.Spec.NodeName == SystemNode && podReady(p) })
	took := time.Since(start)
	t.Logf("2 pods scheduled on %s and Ready after %s", SystemNode, took.Round(10*time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("pods Ready after %s, before the 2s their annotation asks", took)
	}

	// The disruption controller allows one eviction (2 healthy, 1 needed).
	waitFor(ctx, t, "the PodDisruptionBudget allows 1 disruption", func() (bool, string) {
		got := &policyv1.PodDisruptionBudget{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
			return false, err.Error()
		}
		return got.Status.DisruptionsAllowed == 1 && got.Status.CurrentHealthy == 2, fmt.Sprintf("%+v", got.Status)
	})
	evict := func(p *corev1.Pod) error {
		return c.Client.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		})
	}
	if err := evict(&pods[0]); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	evicted := time.Now()
	// Until the replacement is Ready (2 s after it is bound, its
	// annotation says) the budget allows nothing more.
	err := evict(&pods[1])
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction while the first pod's replacement is not Ready: %v, want 429", err)
	}
	t.Logf("refused as expected: %v", err)
	waitPods(ctx, t, c, labels, 2, func(p *corev1.Pod) bool { return p.Name != pods[0].Name && podReady(p) })
	if d := time.Since(evicted); d < 2*time.Second {
		t.Errorf("the replacement pod was Ready %s after the eviction, before its 2s start-up", d)
	}
}

// TestNodeLifecycle proves the node lifecycle controller is real: a node
// whose kubelet (kwok) stops is marked NotReady and tainted unreachable,
// and recovers when its kubelet runs again.
func TestNodeLifecycle(t *testing.T) {
	tb := New(t, Options{Kube: true, Kwok: true})
	c := tb.Clusters()[0]
	ctx := t.Context()
	waitNode(ctx, t, c, "the system node Ready", func(n *corev1.Node) bool { return nodeReady(n) == corev1.ConditionTrue })

	setKwok(ctx, t, c, false)
	stopped := time.Now()
	waitNode(ctx, t, c, "the node NotReady and tainted unreachable", func(n *corev1.Node) bool {
		return nodeReady(n) == corev1.ConditionUnknown && hasTaint(n, corev1.TaintNodeUnreachable)
	})
	t.Logf("marked NotReady and tainted %s after its heartbeats stopped (grace %s)",
		time.Since(stopped).Round(100*time.Millisecond), NodeMonitorGracePeriod)

	setKwok(ctx, t, c, true)
	waitNode(ctx, t, c, "the node Ready again, untainted", func(n *corev1.Node) bool {
		return nodeReady(n) == corev1.ConditionTrue && !hasTaint(n, corev1.TaintNodeUnreachable)
	})
}

func setKwok(ctx context.Context, t *testing.T, c *Cluster, on bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: SystemNode}, n); err != nil {
		t.Fatal(err)
	}
	base := n.DeepCopy()
	if on {
		n.Labels[KwokNodeLabel] = "fake"
	} else {
		delete(n.Labels, KwokNodeLabel)
	}
	// A merge patch, as kubectl label sends: the node lifecycle controller
	// and kwok write this node all the time, so an update would conflict.
	if err := c.Client.Patch(ctx, n, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

func waitPods(ctx context.Context, t *testing.T, c *Cluster, labels map[string]string, n int, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var good []corev1.Pod
	waitFor(ctx, t, fmt.Sprintf("%d pods %v", n, labels), func() (bool, string) {
		list := &corev1.PodList{}
		if err := c.Client.List(ctx, list, client.MatchingLabels(labels)); err != nil {
			return false, err.Error()
		}
		good = good[:0]
		var seen []string
		for _, p := range list.Items {
			seen = append(seen, fmt.Sprintf("%s on %q phase %s ready %t", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p)))
			if p.DeletionTimestamp == nil && ok(&p) {
				good = append(good, p)
			}
		}
		return len(good) == n, fmt.Sprint(seen)
	})
	return good
}

func waitNode(ctx context.Context, t *testing.T, c *Cluster, what string, ok func(*corev1.Node) bool) {
	t.Helper()
	waitFor(ctx, t, what, func() (bool, string) {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: SystemNode}, n); err != nil {
			return false, err.Error()
		}
		return ok(n), fmt.Sprintf("ready=%s taints=%v", nodeReady(n), n.Spec.Taints)
	})
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: %s", what, err, last)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
