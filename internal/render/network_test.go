package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// networkFleet is the example fleet (whose H100 and H200 pools have managed
// NICs and GPUDirect RDMA) with each edit applied.
func networkFleet(t *testing.T, edits ...[2]string) *fleet.Fleet {
	t.Helper()
	src := string(mustReadFile(t, exampleFleet))
	for _, e := range edits {
		if !strings.Contains(src, e[0]) {
			t.Fatalf("the example fleet no longer has %s", e[0])
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	f, err := fleet.Parse("fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func decodeOne(t *testing.T, out *Output, file string) map[string]any {
	t.Helper()
	objs, err := crdcheck.DecodeObjects(out.Files[file])
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %v (%d objects)", file, err, len(objs))
	}
	return objs[0].Object
}

// TestNicClusterPolicyWhere: the config step holds a NicClusterPolicy only
// on clusters with a pool of managed NICs whose release names an OFED
// driver; the GPU Operator gets driver.rdma, and each NVIDIADriver of a
// pool with GPUDirect RDMA spec.rdma, only where a pool uses it.
func TestNicClusterPolicyWhere(t *testing.T) {
	const policy = "config/nicclusterpolicy.yaml"
	out, err := Render(networkFleet(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"stg-h100", "prod-h100-a", "prod-h100-b"} {
		if out.Files["clusters/"+c+"/"+policy] == nil {
			t.Errorf("%s: no NicClusterPolicy; config files %v", c, configFiles(out, c))
		}
		if !strings.Contains(string(out.Files["clusters/"+c+"/config/kustomization.yaml"]), "nicclusterpolicy.yaml") {
			t.Errorf("%s: config/kustomization.yaml does not list the NicClusterPolicy", c)
		}
		hr := decodeOne(t, out, "clusters/"+c+"/operators/helmrelease-gpu-operator.yaml")
		rdma := hr["spec"].(map[string]any)["values"].(map[string]any)["driver"].(map[string]any)["rdma"]
		if diff := cmp.Diff(map[string]any{"enabled": true, "useHostMofed": false}, rdma); diff != "" {
			t.Errorf("%s: GPU Operator driver.rdma (-want +got):\n%s", c, diff)
		}
	}
	// prod-a100's pools manage no NICs and use no RDMA.
	if b := out.Files["clusters/prod-a100/"+policy]; b != nil {
		t.Errorf("prod-a100 (no managed NICs) has a NicClusterPolicy:\n%s", b)
	}
	if strings.Contains(string(out.Files["clusters/prod-a100/operators/helmrelease-gpu-operator.yaml"]), "rdma") {
		t.Error("prod-a100's GPU Operator values name rdma")
	}
	nd := decodeOne(t, out, "clusters/prod-h100-b/config/nvidiadriver-h200-570-172-08.yaml")
	if got := nd["spec"].(map[string]any)["rdma"]; got == nil {
		t.Error("the H200 pool's NVIDIADriver has no spec.rdma")
	}
	if strings.Contains(string(out.Files["clusters/prod-a100/config/nvidiadriver-a100-570-172-08.yaml"]), "rdma") {
		t.Error("the A100 pool's NVIDIADriver names rdma")
	}

	// A release without ofed-driver leaves the network side as it is.
	out, err = Render(networkFleet(t, [2]string{"ofed-driver = \"25.04-0.6.1.0-2\"   # the Network Operator's OFED (DOCA) driver\n", ""}))
	if err != nil {
		t.Fatal(err)
	}
	if b := out.Files["clusters/stg-h100/"+policy]; b != nil {
		t.Errorf("a release without ofed-driver wrote a NicClusterPolicy:\n%s", b)
	}
}

// TestNicClusterPolicyShape: the one object the operator reconciles, kept
// when a later render drops it, with the OFED driver's upgrade machine on
// only while the cluster's rollout moves OFED (and then moving only the
// nodes gpufleet releases), and the nodes of the managed pools only (the
// pool label where two pools share a product).
func TestNicClusterPolicyShape(t *testing.T) {
	f := networkFleet(t, [2]string{"name = \"h200\"\nproduct = \"NVIDIA-H200\"\nnodes = 8\nmanaged-nics = true\ngpudirect-rdma = true\n",
		"name = \"h100-eth\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 8\n"})
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	obj := decodeOne(t, out, "clusters/prod-h100-b/config/nicclusterpolicy.yaml")
	meta := obj["metadata"].(map[string]any)
	if meta["name"] != NicClusterPolicyName || meta["annotations"].(map[string]any)["kustomize.toolkit.fluxcd.io/prune"] != "disabled" {
		t.Errorf("metadata %v: want name %s and prune disabled", meta, NicClusterPolicyName)
	}
	spec := obj["spec"].(map[string]any)
	ofed := spec["ofedDriver"].(map[string]any)
	// The operator's node limit and drain off: the lifecycle controller
	// holds each node and drains it first. Its state machine off at rest
	// (no rollout moves OFED): on while one does, below.
	wantUp := map[string]any{"autoUpgrade": false, "maxParallelUpgrades": int64(0), "drain": map[string]any{"enable": false}}
	if diff := cmp.Diff(wantUp, ofed["upgradePolicy"]); diff != "" {
		t.Errorf("ofedDriver.upgradePolicy (-want +got):\n%s", diff)
	}
	moving, err := Render(networkFleet(t, [2]string{`stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }"}))
	if err != nil {
		t.Fatal(err)
	}
	for c, want := range map[string]bool{"stg-h100": true, "prod-h100-a": false} {
		up := decodeOne(t, moving, "clusters/"+c+"/config/nicclusterpolicy.yaml")["spec"].(map[string]any)["ofedDriver"].(map[string]any)["upgradePolicy"].(map[string]any)
		if up["autoUpgrade"] != want {
			t.Errorf("%s, the rollout of r2026-10 (OFED moving: %t): upgradePolicy %v", c, want, up)
		}
	}
	if ofed["version"] != "25.04-0.6.1.0-2" || ofed["repository"] != "nvcr.io/nvidia/mellanox" || ofed["image"] != "doca-driver" {
		t.Errorf("ofedDriver %v", ofed)
	}
	terms := spec["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"].([]any)
	want := []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "nvidia.com/gpu.product", "operator": "In", "values": []any{"NVIDIA-H100-80GB-HBM3"}},
		map[string]any{"key": "gpufleet.io/pool", "operator": "In", "values": []any{"h100"}},
		map[string]any{"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": []any{"true"}},
	}}}
	if diff := cmp.Diff(want, terms); diff != "" {
		t.Errorf("nodeSelectorTerms: only pool h100, told apart from h100-eth by its label (-want +got):\n%s", diff)
	}
}

// TestNicClusterPolicyEveryCRDVersion renders the NicClusterPolicy at each
// Network Operator version in the shared charts, with the OFED driver that
// version ships, and checks it against that version's CRD as the API
// server would and with every default taken out (the v25.x CRDs require
// repository and version; v26.4.1 only image), and the RDMA shared device
// plugin image that version names.
func TestNicClusterPolicyEveryCRDVersion(t *testing.T) {
	ops := sharedtest.Operators(t)
	ofed := map[string]string{"v25.4.0": "25.04-0.6.1.0-2", "v25.10.0": "doca3.2.0-25.10-1.2.8.0-2", "v26.4.1": "doca3.4.1-26.04-1.1.0.0-1"}
	plugin := map[string]string{"v25.4.0": "ghcr.io/mellanox:v1.5.3", "v25.10.0": "nvcr.io/nvidia/mellanox:network-operator-v25.10.0", "v26.4.1": "nvcr.io/nvidia/mellanox:network-operator-v26.4.1"}
	versions, err := os.ReadDir(filepath.Join(ops, "network-operator"))
	if err != nil {
		t.Fatal(err)
	}
	for v := range ofed {
		if _, err := os.Stat(filepath.Join(ops, "network-operator", v)); err != nil {
			t.Errorf("the shared charts lack Network Operator %s", v)
		}
	}
	for _, v := range versions {
		t.Run(v.Name(), func(t *testing.T) {
			version, ok := ofed[v.Name()]
			if !ok {
				t.Skipf("no OFED driver known for Network Operator %s", v.Name())
			}
			crdPath := filepath.Join(ops, "network-operator", v.Name(), "deployment/network-operator/crds/mellanox.com_nicclusterpolicies.yaml")
			out, err := Render(networkFleet(t,
				[2]string{`network-operator = "v25.4.0"`, `network-operator = "` + v.Name() + `"`},
				[2]string{`ofed-driver = "25.04-0.6.1.0-2"`, `ofed-driver = "` + version + `"`}))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := crdcheck.DecodeObjects(out.Files["clusters/stg-h100/config/nicclusterpolicy.yaml"])
			if err != nil || len(objs) != 1 {
				t.Fatalf("decode: %v (%d objects)", err, len(objs))
			}
			for _, dropped := range []bool{false, true} {
				for _, p := range crdSet(t, crdPath, dropped).Validate(t.Context(), objs[0]) {
					t.Errorf("defaults dropped %t: %s: %s", dropped, p.Object(), p.Message())
				}
			}
			// The check has teeth: without repository and version the v25.x
			// CRDs refuse the OFED driver, v26.4.1 takes them from
			// spec.global.
			bare := objs[0].DeepCopy()
			o := bare.Object["spec"].(map[string]any)["ofedDriver"].(map[string]any)
			delete(o, "repository")
			delete(o, "version")
			refused := len(crdSet(t, crdPath, true).Validate(t.Context(), bare)) > 0
			if want := v.Name() != "v26.4.1"; refused != want {
				t.Errorf("ofedDriver without repository and version refused %t, want %t", refused, want)
			}
			dp := objs[0].Object["spec"].(map[string]any)["rdmaSharedDevicePlugin"].(map[string]any)
			if got := dp["repository"].(string) + ":" + dp["version"].(string); got != plugin[v.Name()] {
				t.Errorf("RDMA shared device plugin %s, want %s", got, plugin[v.Name()])
			}
		})
	}
}

// TestNicClusterPolicyArgoCD: on Argo CD the policy is in the config
// step's sync wave and kept when pruned (Prune=false).
func TestNicClusterPolicyArgoCD(t *testing.T) {
	src := string(mustReadFile(t, "testdata/argocd/fleet.toml"))
	for _, e := range [][2]string{
		{"[releases.r2]\n", "[releases.r2]\nnetwork-operator = \"v25.10.0\"\nofed-driver = \"doca3.2.0-25.10-1.2.8.0-2\"\n"},
		{"nodes = 2\n", "nodes = 2\nmanaged-nics = true\n"},
	} {
		if !strings.Contains(src, e[0]) {
			t.Fatalf("testdata/argocd/fleet.toml no longer has %q", e[0])
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	f, err := fleet.Parse("testdata/argocd/fleet.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := RenderWith(f, Options{Charts: &fakeCharts{calls: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	ann := decodeOne(t, out, "clusters/stg/config/nicclusterpolicy.yaml")["metadata"].(map[string]any)["annotations"].(map[string]any)
	want := map[string]any{"argocd.argoproj.io/sync-options": "Prune=false", "argocd.argoproj.io/sync-wave": "1"}
	if diff := cmp.Diff(want, ann); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// TestDriverRolloutOFED: a cluster with managed NICs whose rollout release
// names an OFED driver gets spec.ofed, its versions taken from the
// promotion as the GPU driver's are (the previous falls back to the target
// where the release rolled back to names none), peermem where any pool of
// the rollout uses GPUDirect RDMA, and the object passes gpufleet's
// own CRD; a cluster without managed NICs gets none.
func TestDriverRolloutOFED(t *testing.T) {
	const (
		old   = "25.04-0.6.1.0-2"
		newer = "doca3.2.0-25.10-1.2.8.0-2"
	)
	rollout := [2]string{`stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }"}
	ethPool := [2]string{"name = \"h200\"\nproduct = \"NVIDIA-H200\"\nnodes = 8\nmanaged-nics = true\ngpudirect-rdma = true\n",
		"name = \"h200\"\nproduct = \"NVIDIA-H200\"\nnodes = 8\n"}
	aborted := [2]string{rollout[0], "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\", aborted = true }"}
	noOldOFED := [2]string{"ofed-driver = \"25.04-0.6.1.0-2\"   # the Network Operator's OFED (DOCA) driver\n", ""}
	own := crdSet(t, filepath.Join("..", "..", "config", "crd", "bases", "gpufleet.io_driverrollouts.yaml"), false)
	tests := []struct {
		name    string
		edits   [][2]string
		cluster string
		want    *v1alpha1.OFEDSpec
	}{
		{"at rest", nil, "stg-h100", &v1alpha1.OFEDSpec{TargetVersion: old, PreviousVersion: old, Peermem: true}},
		{"rolling out", [][2]string{rollout}, "stg-h100", &v1alpha1.OFEDSpec{TargetVersion: newer, PreviousVersion: old, Peermem: true}},
		{"not reached yet", [][2]string{rollout}, "prod-h100-a", &v1alpha1.OFEDSpec{TargetVersion: old, PreviousVersion: old, Peermem: true}},
		{"aborted", [][2]string{aborted}, "stg-h100", &v1alpha1.OFEDSpec{TargetVersion: newer, PreviousVersion: old, Peermem: true}},
		{"the stable release names none", [][2]string{rollout, noOldOFED}, "stg-h100", &v1alpha1.OFEDSpec{TargetVersion: newer, PreviousVersion: newer, Peermem: true}},
		{"the rollout release names none", [][2]string{noOldOFED}, "stg-h100", nil},
		// Its nodes have no OFED: the rollout's OFED nodes are the other
		// pool's, as the NicClusterPolicy selects them.
		{"a pool without managed NICs beside one with them", [][2]string{ethPool}, "prod-h100-b", &v1alpha1.OFEDSpec{TargetVersion: old, PreviousVersion: old, Peermem: true,
			NodeSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: v1alpha1.LabelGFDProduct, Operator: metav1.LabelSelectorOpIn, Values: []string{"NVIDIA-H100-80GB-HBM3"}},
				{Key: "feature.node.kubernetes.io/pci-15b3.present", Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}},
			}}}}},
		{"no managed NICs", nil, "prod-a100", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := networkFleet(t, tt.edits...)
			dr, err := DriverRollout(f, tt.cluster, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, dr.Spec.OFED); diff != "" {
				t.Errorf("spec.ofed (-want +got):\n%s", diff)
			}
			out, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			obj := decodeOne(t, out, "clusters/"+tt.cluster+"/lifecycle/driverrollout.yaml")
			if _, has := obj["spec"].(map[string]any)["ofed"]; has != (tt.want != nil) {
				t.Errorf("the rendered DriverRollout has spec.ofed %t, want %t", has, tt.want != nil)
			}
			objs, _ := crdcheck.DecodeObjects(out.Files["clusters/"+tt.cluster+"/lifecycle/driverrollout.yaml"])
			for _, p := range own.Validate(t.Context(), objs[0]) {
				t.Errorf("DriverRollout: %s: %s", p.Message(), p.Object())
			}
		})
	}
}
