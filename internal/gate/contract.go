package gate

import (
	"fmt"
	"strings"
)

// CheckKind is what a check judges: one kind per rule of Evaluate. Its
// value is the pattern of the check's name, "*" standing for the object
// judged (a Kustomization's name, a pool's name…); a kind without "*" has
// one check per cluster.
//
// Readers of a report (explain, the dashboard, `gpufleet status --live`,
// promote) switch on the kind, never on the text of a name: explain's tests
// fail for a kind that no link of its chain answers for (see CheckKinds).
type CheckKind string

// The kinds of checks. Adding one means adding it to CheckKinds, giving it
// a constructor, and an explain link (the tests of package explain name a
// kind without one).
const (
	// CheckKustomization: a Flux Kustomization of the cluster is Ready at
	// the expected revision. Object: its name (in flux-system).
	CheckKustomization CheckKind = "flux/Kustomization/*"
	// CheckApplication: an Argo CD Application of a cluster on Argo CD is
	// Synced at the expected revision, Healthy, under automated sync and
	// with no sync in progress. Object: its name (in argocd).
	CheckApplication CheckKind = "argocd/Application/*"
	// CheckHelmRelease: an operator's HelmRelease is Ready at its chart
	// version (the helmrelease chart mode). Object: "namespace/name".
	CheckHelmRelease CheckKind = "flux/HelmRelease/*"
	// CheckOperatorDeployment: an operator's Deployment runs its chart
	// version (the manifests chart mode). Object: "namespace/name".
	CheckOperatorDeployment CheckKind = "operators/Deployment/*"
	// CheckController: gpufleet-controller's Deployment runs the release's
	// controller image, every replica Available (Expected.ControllerImage).
	CheckController CheckKind = "gpufleet-controller/Deployment"
	// CheckClusterPolicy: the GPU Operator's ClusterPolicy is ready.
	CheckClusterPolicy CheckKind = "gpu-operator/ClusterPolicy"
	// CheckDriverManagement: the ClusterPolicy manages the driver as the
	// fleet file says (Expected.DriverManagement): NVIDIADriver objects
	// (spec.driver.useNvidiaDriverCRD true) or its own DaemonSet.
	CheckDriverManagement CheckKind = "gpu-operator/driver-management"
	// CheckNVIDIADriver: an NVIDIADriver of the release is ready. Object:
	// its name.
	CheckNVIDIADriver CheckKind = "gpu-operator/NVIDIADriver/*"
	// CheckPoolDriver: every node of a pool runs the release's driver.
	// Object: the pool.
	CheckPoolDriver CheckKind = "nodes/*/driver"
	// CheckPoolDriverLabel: on gpufleet's actuator, every node of a pool
	// that runs the release's driver is selected by an NVIDIADriver of it
	// (see DriverUnlabelled). Object: the pool.
	CheckPoolDriverLabel CheckKind = "nodes/*/driver-label"
	// CheckPoolHeld: on the gpu-operator actuator, every node of a pool
	// is under gpufleet: held with the operator's skip label, or released
	// by its rollout (see Held). Object: the pool.
	CheckPoolHeld CheckKind = "nodes/*/held"
	// CheckPoolReady: every node of a pool is Ready. Object: the pool.
	CheckPoolReady CheckKind = "nodes/*/ready"
	// CheckPoolGPUErrors: no node of a pool reports a GPU error condition.
	// Object: the pool.
	CheckPoolGPUErrors CheckKind = "nodes/*/gpu-errors"
	// CheckQuarantined: no more nodes are quarantined than the failure
	// budget allows.
	CheckQuarantined CheckKind = "nodes/quarantined"
	// CheckRollout: the cluster's DriverRollout completed within its
	// failure budget. Object: its name. Its Observed says the rollout's
	// phase, nodes done and budget used, which `gpufleet status --live`
	// shows.
	CheckRollout CheckKind = "lifecycle/DriverRollout/*"
	// CheckConnect: the cluster could not be read at all (Run); Evaluate
	// never makes it.
	CheckConnect CheckKind = "connect"
)

// CheckKinds are every kind of check, in the order Evaluate makes them
// (CheckConnect, which only Run makes, last).
func CheckKinds() []CheckKind {
	return []CheckKind{
		CheckKustomization, CheckApplication, CheckHelmRelease, CheckOperatorDeployment, CheckController,
		CheckClusterPolicy, CheckDriverManagement, CheckNVIDIADriver,
		CheckPoolDriver, CheckPoolDriverLabel, CheckPoolHeld, CheckPoolReady, CheckPoolGPUErrors, CheckQuarantined,
		CheckRollout,
		CheckConnect,
	}
}

// PerPool says the kind has one check per pool of the cluster (the object
// is the pool's name).
func (k CheckKind) PerPool() bool {
	return strings.HasPrefix(string(k), "nodes/*/")
}

// GitOps says the check judges an object of the cluster's GitOps engine
// (a Flux Kustomization or HelmRelease, an Argo CD Application: its
// readiness at the expected revision), as the dashboard groups them.
func (k CheckKind) GitOps() bool {
	return k == CheckKustomization || k == CheckHelmRelease || k == CheckApplication
}

// CheckID names one check: its kind and the object it judges. Its text
// (String, and its JSON) is the check's name as every report has printed
// it, e.g. "nodes/h100/driver-label"; ParseCheckID reads it back.
type CheckID struct {
	Kind CheckKind
	// Object is what the check judges within its kind; empty for a kind
	// with one check per cluster.
	Object string
}

// Constructors, one per kind.

// KustomizationCheck is the check of Flux Kustomization name.
func KustomizationCheck(name string) CheckID { return CheckID{CheckKustomization, name} }

// ApplicationCheck is the check of Argo CD Application name.
func ApplicationCheck(name string) CheckID { return CheckID{CheckApplication, name} }

// HelmReleaseCheck is the check of the HelmRelease at key, "namespace/name".
func HelmReleaseCheck(key string) CheckID { return CheckID{CheckHelmRelease, key} }

// OperatorDeploymentCheck is the check of the operator Deployment at key,
// "namespace/name".
func OperatorDeploymentCheck(key string) CheckID { return CheckID{CheckOperatorDeployment, key} }

// ControllerCheck is the check of gpufleet-controller's Deployment.
func ControllerCheck() CheckID { return CheckID{Kind: CheckController} }

// ClusterPolicyCheck is the check of the cluster's ClusterPolicy.
func ClusterPolicyCheck() CheckID { return CheckID{Kind: CheckClusterPolicy} }

// DriverManagementCheck is the check of the ClusterPolicy's driver
// management.
func DriverManagementCheck() CheckID { return CheckID{Kind: CheckDriverManagement} }

// NVIDIADriverCheck is the check of NVIDIADriver name.
func NVIDIADriverCheck(name string) CheckID { return CheckID{CheckNVIDIADriver, name} }

// PoolDriverCheck is the check that pool's nodes run the release's driver.
func PoolDriverCheck(pool string) CheckID { return CheckID{CheckPoolDriver, pool} }

// PoolDriverLabelCheck is the check of pool's nodes' gpufleet.io/driver.
func PoolDriverLabelCheck(pool string) CheckID { return CheckID{CheckPoolDriverLabel, pool} }

// PoolHeldCheck is the check that pool's nodes are held (gpu-operator
// actuator).
func PoolHeldCheck(pool string) CheckID { return CheckID{CheckPoolHeld, pool} }

// PoolReadyCheck is the check that pool's nodes are Ready.
func PoolReadyCheck(pool string) CheckID { return CheckID{CheckPoolReady, pool} }

// PoolGPUErrorsCheck is the check of pool's nodes' GPU error conditions.
func PoolGPUErrorsCheck(pool string) CheckID { return CheckID{CheckPoolGPUErrors, pool} }

// QuarantinedCheck is the check of the cluster's quarantined nodes.
func QuarantinedCheck() CheckID { return CheckID{Kind: CheckQuarantined} }

// RolloutCheck is the check of DriverRollout name.
func RolloutCheck(name string) CheckID { return CheckID{CheckRollout, name} }

// ConnectCheck is the one check of a cluster that could not be read.
func ConnectCheck() CheckID { return CheckID{Kind: CheckConnect} }

// String is the check's name: the kind's pattern with the object in it.
func (id CheckID) String() string {
	return strings.Replace(string(id.Kind), "*", id.Object, 1)
}

// MarshalText writes the check's name, so a report's JSON and YAML carry
// the names they always did.
func (id CheckID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads a check's name (ParseCheckID).
func (id *CheckID) UnmarshalText(b []byte) error {
	v, err := ParseCheckID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseCheckID reads a check's name back into its kind and object. A pool's
// name, like every object's a check names, holds no '/' but where the kind
// says ("namespace/name"), so each name has one reading.
func ParseCheckID(s string) (CheckID, error) {
	for _, k := range CheckKinds() {
		prefix, suffix, hasObject := strings.Cut(string(k), "*")
		if !hasObject {
			if s == prefix {
				return CheckID{Kind: k}, nil
			}
			continue
		}
		obj, ok := strings.CutPrefix(s, prefix)
		if !ok {
			continue
		}
		if obj, ok = strings.CutSuffix(obj, suffix); !ok || obj == "" {
			continue
		}
		if k.PerPool() && strings.Contains(obj, "/") {
			continue
		}
		return CheckID{Kind: k, Object: obj}, nil
	}
	return CheckID{}, fmt.Errorf("%q is not the name of a gate check", s)
}
