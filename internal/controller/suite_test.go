package controller

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/admission"
	"github.com/gpufleet/gpufleet/internal/planner"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim"
	"github.com/gpufleet/gpufleet/internal/testworld/nodesim/nodesimtest"
	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// The envtest suite: one real cluster for the package (kube-apiserver and
// etcd, kube-controller-manager and kube-scheduler, kwok as the kubelet),
// one node simulator playing NFD, GFD and the driver install for every
// test's pool, and for each driver version the DaemonSet the GPU
// Operator's NVIDIADriver would run (package nodesimtest), whose pods the
// real DaemonSet controller puts on the nodes as their gpufleet.io/driver
// labels say. Each test runs its own controller manager (in-process, for
// real, as the controller's service account under config/rbac and the
// admission policies of config/admission) against its own pool of nodes
// and stops it at the end; tests run one at a time, so only one controller
// acts at once.

// driverNamespace holds the driver DaemonSets and their pods, as the GPU
// Operator's namespace does.
const driverNamespace = "gpu-operator"

var suite struct {
	once sync.Once
	err  error
	tb   *testbed.Testbed
	c    client.Client
	cfg  *testbed.Cluster
	sim  *nodesim.Sim
	stop context.CancelFunc
	done chan struct{}
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	code := m.Run()
	if suite.stop != nil {
		suite.stop()
		<-suite.done
	}
	if suite.tb != nil {
		if err := suite.tb.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testbed:", err)
		}
	}
	os.Exit(code)
}

// zapLevel keeps the controller's logs quiet unless GPUFLEET_TEST_LOG is set.
func zapLevel() zapcore.Level {
	if os.Getenv("GPUFLEET_TEST_LOG") != "" {
		return -1
	}
	return 2
}

func testScheme() *runtime.Scheme {
	s := testbed.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// env starts the testbed once for the package. Under -short the test is
// skipped; without the testbed's programs it fails, naming `make testbin`.
func env(t testing.TB) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("envtest: skipped under -short (needs the testbed's programs from `make testbin`)")
	}
	suite.once.Do(func() {
		// The generated CRD as it is: a schema or CEL rule the API server
		// refuses fails every test here.
		tb, err := testbed.Start(context.Background(), testbed.Options{
			CRDDirs: []string{"../../config/crd/bases"},
			Scheme:  testScheme(),
			Kube:    true,
			Kwok:    true,
		})
		if err != nil {
			suite.err = err
			return
		}
		suite.tb = tb
		cl := tb.Clusters()[0]
		suite.cfg = cl
		suite.c = cl.Client
		// Every test runs under the admission policy that keeps one owner
		// per node, so a controller write it refuses fails the test.
		if err := installAdmission(context.Background(), cl.Client); err != nil {
			suite.err = err
			return
		}
		kube, err := kubernetes.NewForConfig(cl.Config)
		if err != nil {
			suite.err = err
			return
		}
		suite.sim = nodesim.New(cl.Client, nodesim.Options{DriverNamespace: driverNamespace, InstallTime: time.Second, Resync: 200 * time.Millisecond, Kube: kube})
		ctx, cancel := context.WithCancel(context.Background())
		suite.stop = cancel
		suite.done = make(chan struct{})
		go func() {
			defer close(suite.done)
			_ = suite.sim.Run(ctx)
		}()
	})
	if suite.err != nil {
		t.Fatalf("envtest: %v", suite.err)
	}
	return suite.c
}

// offsetClock is the wall clock moved by an offset a test sets. Real
// timestamps (Events, conditions) stay comparable with it while the offset
// is zero; a test moves it only while nothing is in flight.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time      { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Set(d time.Duration) { c.offset.Store(int64(d)) }

// controllerRun is one running controller manager.
type controllerRun struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// startController runs a controller manager until stop or the test's end.
func startController(t testing.TB, clock Clock, wrap func(client.Client) client.Client) *controllerRun {
	t.Helper()
	return startControllerVersion(t, clock, wrap, "")
}

// startControllerVersion is startController for a controller that says
// it is version (see Reconciler.Version).
func startControllerVersion(t testing.TB, clock Clock, wrap func(client.Client) client.Client, version string) *controllerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := NewManager(ctx, asController(suite.cfg.Config), Options{
		MetricsAddr: "0", ProbeAddr: "0", Clock: clock,
		DrainRetry: 300 * time.Millisecond, HealthPoll: time.Second,
		SkipNameValidation: true, WrapClient: wrap, Version: version,
	})
	if err != nil {
		cancel()
		t.Fatalf("new manager: %v", err)
	}
	run := &controllerRun{t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { run.done <- mgr.Start(ctx) }()
	t.Cleanup(run.stop)
	return run
}

// asController is cfg impersonating the controller's service account, so
// that what the controller writes has exactly the rights of config/rbac
// and passes the admission policies as the installed controller's writes
// must (they let that account alone write its node labels and
// DriverRollout status).
func asController(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Impersonate = rest.ImpersonationConfig{UserName: admission.ControllerUser}
	return out
}

// controllerClient is a client as the controller's service account, for
// what a test writes in the controller's place (a state an earlier
// controller left).
func controllerClient(t testing.TB) client.Client {
	t.Helper()
	c, err := client.New(asController(suite.cfg.Config), client.Options{Scheme: testScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (r *controllerRun) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		r.t.Errorf("controller manager: %v", err)
	}
	r.cancel = nil
}

// pool creates a pool of n simulated GPU nodes named after the test, and a
// CPU node beside them (kwok its kubelet too) that no rollout may touch.
func pool(t *testing.T, name string, n int, driver string) (nodes []string, cpu string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := nodesimtest.AddPool(ctx, suite.c, suite.sim, driverNamespace, nodesim.Pool{Name: name, Product: "NVIDIA-H100-80GB-HBM3", Nodes: n, Driver: driver})
	if err != nil {
		t.Fatalf("add pool: %v", err)
	}
	// A pool a rollout starts on has been running: its nodes Ready, on
	// their driver.
	if err := nodesimtest.WaitReady(ctx, suite.c, driverNamespace, driver, nodes, nil); err != nil {
		t.Fatal(err)
	}
	cpu = name + "-cpu"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cpu, Labels: map[string]string{
		v1alpha1.LabelPool: name, testbed.KwokNodeLabel: "fake",
	}}}
	if err := suite.c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create cpu node: %v", err)
	}
	return nodes, cpu
}

// newRollout is a DriverRollout over pool's GPU nodes with short timings.
func newRollout(name, pool, from, to string) *v1alpha1.DriverRollout {
	return &v1alpha1.DriverRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DriverRolloutSpec{
			TargetVersion: to, PreviousVersion: from,
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				"gpufleet.io/pool": pool, "nvidia.com/gpu.present": "true",
			}},
			ParallelNodes: 1,
			FailureBudget: 0,
			Soak:          metav1.Duration{Duration: time.Second},
			Timeouts: v1alpha1.StepTimeouts{
				Drain:    metav1.Duration{Duration: 20 * time.Second},
				Install:  metav1.Duration{Duration: 15 * time.Second},
				Validate: metav1.Duration{Duration: 10 * time.Second},
			},
		},
	}
}

// create creates ro and deletes it when the test ends (while the test's
// controller still runs, so the finalizer releases the nodes). The driver
// DaemonSets of its target and previous versions run first, as the GPU
// Operator runs the NVIDIADrivers render writes for both.
func create(t testing.TB, ro *v1alpha1.DriverRollout) {
	t.Helper()
	ctx := context.Background()
	for _, v := range []string{ro.Spec.TargetVersion, ro.Spec.PreviousVersion} {
		if err := nodesimtest.DriverDaemonSets(ctx, suite.c, driverNamespace, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := suite.c.Create(ctx, ro); err != nil {
		t.Fatalf("create rollout: %v", err)
	}
	t.Cleanup(func() { deleteRollout(t, ro.Name) })
}

// deleteRollout deletes a rollout and waits for the controller's finalizer
// to let it go.
func deleteRollout(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	ro := &v1alpha1.DriverRollout{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := suite.c.Delete(ctx, ro); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Errorf("delete rollout: %v", err)
		}
		return
	}
	waitFor(t, 20*time.Second, "rollout deleted", func() (bool, string) {
		err := suite.c.Get(ctx, client.ObjectKeyFromObject(ro), &v1alpha1.DriverRollout{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// edit changes ro's spec with retries on conflicts.
func edit(t testing.TB, name string, fn func(*v1alpha1.DriverRollout)) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		ro := &v1alpha1.DriverRollout{}
		if err := suite.c.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
			t.Fatalf("get rollout: %v", err)
		}
		fn(ro)
		err := suite.c.Update(ctx, ro)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update rollout: %v", err)
		}
	}
	t.Fatalf("update rollout %s: too many conflicts", name)
}

// waitFor polls cond until it holds or timeout passes; the failure names
// what was awaited and cond's last word.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getRollout(t testing.TB, name string) *v1alpha1.DriverRollout {
	t.Helper()
	ro := &v1alpha1.DriverRollout{}
	if err := suite.c.Get(context.Background(), client.ObjectKey{Name: name}, ro); err != nil {
		t.Fatalf("get rollout: %v", err)
	}
	return ro
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := suite.c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatalf("get node: %v", err)
	}
	return n
}

// phases returns each node's recorded phase ("" when untouched).
func phases(t *testing.T, nodes []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range nodes {
		out[n] = getNode(t, n).Labels[v1alpha1.LabelPhase]
	}
	return out
}

// waitPhase waits for the rollout's status phase.
func waitPhase(t testing.TB, name string, want v1alpha1.RolloutPhase, timeout time.Duration) *v1alpha1.DriverRollout {
	t.Helper()
	var ro *v1alpha1.DriverRollout
	waitFor(t, timeout, fmt.Sprintf("rollout %s phase %s", name, want), func() (bool, string) {
		ro = getRollout(t, name)
		return ro.Status.Phase == want, fmt.Sprintf("phase %q, progress %s, nodes %+v", ro.Status.Phase, ro.Status.Progress, ro.Status.Nodes)
	})
	return ro
}

// waitNodePhase waits for a node's recorded phase.
func waitNodePhase(t *testing.T, node string, want v1alpha1.NodePhase, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("node %s phase %s", node, want), func() (bool, string) {
		got := getNode(t, node).Labels[v1alpha1.LabelPhase]
		return got == string(want), "phase " + got
	})
}

// events returns the Events about the rollout, as "Reason: note" lines.
func events(t *testing.T, rollout string) []string {
	t.Helper()
	var list corev1.EventList
	if err := suite.c.List(context.Background(), &list); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == v1alpha1.KindDriverRollout && e.InvolvedObject.Name == rollout {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// waitEvent waits for an Event about the rollout whose line contains all of parts.
func waitEvent(t *testing.T, rollout string, parts ...string) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("event %q", parts), func() (bool, string) {
		evs := events(t, rollout)
		for _, e := range evs {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(e, p)
			}
			if all {
				return true, ""
			}
		}
		return false, strings.Join(evs, "\n")
	})
}

// sampler records the most selected nodes unavailable at once (cordoned or
// NotReady), polling the API server until stopped.
type sampler struct {
	max   atomic.Int64
	stopC chan struct{}
	done  chan struct{}
}

func sample(t *testing.T, nodes []string) *sampler {
	s := &sampler{stopC: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			var list corev1.NodeList
			if err := suite.c.List(context.Background(), &list); err == nil {
				n := 0
				for _, node := range list.Items {
					if !contains(nodes, node.Name) {
						continue
					}
					if node.Spec.Unschedulable || !planner.NodeReady(&node) {
						n++
					}
				}
				if int64(n) > s.max.Load() {
					s.max.Store(int64(n))
				}
			}
			select {
			case <-s.stopC:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) stop() {
	select {
	case <-s.stopC:
	default:
		close(s.stopC)
	}
	<-s.done
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}
