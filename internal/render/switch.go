package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/versions"
)

// The driver management guard.
//
// A GPU Operator installed with Helm in its default mode runs the driver
// from its ClusterPolicy: one DaemonSet, nvidia-driver-daemonset. Switching
// it to NVIDIADriver management (driver.nvidiaDriverCRD.enabled, the
// ClusterPolicy's spec.driver.useNvidiaDriverCRD) makes the operator delete
// that DaemonSet: below v26.7.0 with background propagation, so every
// driver pod of the cluster goes at once, and the GPU workloads with them.
// From v26.7.0 it orphans the pods and migrates them node by node, but only
// when the operator already runs v26.7.0 in ClusterPolicy mode: NVIDIA
// documents the migration as two separate Helm upgrades and warns against
// combining them. Write and Diff therefore refuse, before writing anything,
// a render that makes the switch against the tree already in the output
// folder. Below v26.7.0, or with the version changing in the same render,
// it would take every driver down; on v26.7.0 or later, gpufleet does not
// drive the operator's migration yet (it would need the operator's upgrade
// policy on while nothing else moves, and a new DriverRollout to hold and
// release each node of it, and no v26.7.0 operator runs here to prove
// that), so a cluster adopted in ClusterPolicy mode stays in it, moved by
// the gpu-operator actuator, which the real operator has proven.
//
// The switch back, from NVIDIADriver to ClusterPolicy management, is
// refused on every version: the ClusterPolicy's DaemonSet is created for
// every node at once (its pods wait only for the NVIDIADriver pods to go),
// and Flux prunes the NVIDIADrivers in the same apply, whose DaemonSets the
// operator deletes with their pods: every node's driver is replaced at
// once. No operator version migrates that way node by node.

// minOrphanMigration is the first GPU Operator version that orphans the
// ClusterPolicy's driver pods when it is switched to NVIDIADriver
// management instead of deleting them.
var minOrphanMigration = versions.MustParse("26.7.0")

// gpuOperatorState is how a tree installs a cluster's GPU Operator, read
// back from the files render wrote.
type gpuOperatorState struct {
	version string
	// nvidiaDriver: driver management by NVIDIADriver objects; false, by
	// the ClusterPolicy.
	nvidiaDriver bool
}

// SwitchError is a render refused because it would switch a cluster's GPU
// Operator from ClusterPolicy to NVIDIADriver driver management in a way
// that takes every driver pod of the cluster down at once.
type SwitchError struct {
	Cluster string
	// From and To are the GPU Operator versions in the output folder and
	// in the render.
	From, To string
	// Back: the switch is from NVIDIADriver to ClusterPolicy management.
	Back bool
}

func (e *SwitchError) Error() string {
	if e.Back {
		return fmt.Sprintf("cluster %s: refusing to switch the GPU Operator from NVIDIADriver to ClusterPolicy driver management (gpu-operator %s in the output folder, %s in this render): "+
			"the ClusterPolicy's nvidia-driver-daemonset would start on every node at once while Flux prunes the NVIDIADrivers, whose DaemonSets the operator deletes with every driver pod; "+
			"no GPU Operator version moves nodes that way one at a time. Keep driver-management = %q in [clusters.%s.gpu-operator]",
			e.Cluster, e.From, e.To, fleet.DriverManagementNVIDIADriver, e.Cluster)
	}
	why := fmt.Sprintf("gpu-operator %s deletes nvidia-driver-daemonset, and with it every driver pod of the cluster at once, when its ClusterPolicy stops managing the driver", olderOf(e.From, e.To))
	switch {
	case e.From != e.To && !below(e.From, minOrphanMigration) && !below(e.To, minOrphanMigration):
		why = fmt.Sprintf("the operator's own migration of the driver pods needs v%s or later already running in ClusterPolicy mode: upgrading it and switching in one step is what NVIDIA warns against", minOrphanMigration)
	case e.From == e.To && !below(e.To, minOrphanMigration):
		why = fmt.Sprintf("gpu-operator %s would migrate the driver pods itself, node by node, but gpufleet does not hold and release that migration under the cluster's policy yet", e.To)
	}
	return fmt.Sprintf("cluster %s: refusing to switch the GPU Operator from ClusterPolicy to NVIDIADriver driver management (gpu-operator %s in the output folder, %s in this render): %s. "+
		"Keep driver-management = %q in [clusters.%s.gpu-operator]: the gpu-operator actuator moves its nodes one at a time under the policy",
		e.Cluster, e.From, e.To, why, fleet.DriverManagementClusterPolicy, e.Cluster)
}

// olderOf names the version below minOrphanMigration of the two (the
// older when both are).
func olderOf(a, b string) string {
	if below(a, minOrphanMigration) {
		return a
	}
	return b
}

// below reports whether version v is older than lo; a version that does
// not parse counts as older (the guard fails safe).
func below(v string, lo versions.Version) bool {
	sv, err := versions.Parse(v)
	return err != nil || sv.Less(lo)
}

// switchRefused judges one cluster's GPU Operator from oldState (the output
// folder) to newState (the render).
func switchRefused(cluster string, oldState, newState gpuOperatorState) error {
	if oldState.nvidiaDriver && !newState.nvidiaDriver {
		return &SwitchError{Cluster: cluster, From: oldState.version, To: newState.version, Back: true}
	}
	if oldState.nvidiaDriver || !newState.nvidiaDriver {
		return nil
	}
	return &SwitchError{Cluster: cluster, From: oldState.version, To: newState.version}
}

// checkSwitches refuses changes that switch a cluster's GPU Operator from
// ClusterPolicy to NVIDIADriver driver management unsafely (see above).
// Only clusters whose operators folder changes are read: the switch is in
// the GPU Operator's values there.
func checkSwitches(out *Output, dir string, changes []Change) error {
	var clusters []string
	for _, c := range changes {
		name, step, ok := clusterStep(c.Path)
		if ok && step == stepOperators && (len(clusters) == 0 || clusters[len(clusters)-1] != name) {
			clusters = append(clusters, name)
		}
	}
	var errs []error
	for _, name := range clusters {
		prefix := path.Join(ClusterDir(name), stepOperators) + "/"
		newState, ok, err := readGPUOperator(outFiles(out, prefix))
		if err != nil || !ok {
			// Not a tree render reads back (the render writes no GPU
			// Operator there, or not as render writes it): nothing to judge.
			continue
		}
		onDisk, err := diskFiles(dir, prefix)
		if err != nil {
			return err
		}
		oldState, ok, err := readGPUOperator(onDisk)
		if err != nil {
			return fmt.Errorf("read the GPU Operator in the output folder: %w", err)
		}
		if !ok {
			continue // a first render of the cluster (see NewUnadoptedClusters)
		}
		if err := switchRefused(name, oldState, newState); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clusterStep splits clusters/<name>/<step>/... into name and step.
func clusterStep(p string) (name, step string, ok bool) {
	rest, ok := strings.CutPrefix(p, "clusters/")
	if !ok {
		return "", "", false
	}
	name, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	step, _, ok = strings.Cut(rest, "/")
	return name, step, ok
}

// outFiles are out's files under prefix, by their base names.
func outFiles(out *Output, prefix string) map[string][]byte {
	files := map[string][]byte{}
	for p, b := range out.Files {
		if rest, ok := strings.CutPrefix(p, prefix); ok && !strings.Contains(rest, "/") {
			files[rest] = b
		}
	}
	return files
}

// diskFiles are the files an earlier render wrote in dir under prefix, by
// their base names.
func diskFiles(dir, prefix string) (map[string][]byte, error) {
	files := map[string][]byte{}
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(prefix)))
	if errors.Is(err, fs.ErrNotExist) {
		return files, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !isGPUOperatorFile(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(prefix), e.Name()))
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(b, []byte(Header)) {
			files[e.Name()] = b
		}
	}
	return files, nil
}

// isGPUOperatorFile reports whether an operators folder's file holds the
// GPU Operator: its HelmRelease, or in the manifests mode its chart
// rendered (gpu-operator-<version>.yaml).
func isGPUOperatorFile(name string) bool {
	return name == "helmrelease-"+GPUOperatorChart+".yaml" ||
		strings.HasPrefix(name, GPUOperatorChart+"-v") && strings.HasSuffix(name, ".yaml")
}

// readGPUOperator reads how an operators folder (files by base name)
// installs the GPU Operator: from its HelmRelease's values
// (driver.nvidiaDriverCRD.enabled, the chart's default false) in the
// helmrelease mode, from the rendered ClusterPolicy's
// spec.driver.useNvidiaDriverCRD in the manifests mode. false when the
// folder installs none.
func readGPUOperator(files map[string][]byte) (gpuOperatorState, bool, error) {
	if b, ok := files["helmrelease-"+GPUOperatorChart+".yaml"]; ok {
		var hr struct {
			Spec struct {
				Chart struct {
					Spec struct {
						Chart, Version string
					}
				}
				Values struct {
					Driver struct {
						NvidiaDriverCRD struct {
							Enabled bool
						} `json:"nvidiaDriverCRD"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(b, &hr); err != nil {
			return gpuOperatorState{}, false, fmt.Errorf("helmrelease-%s.yaml: %w", GPUOperatorChart, err)
		}
		return gpuOperatorState{version: hr.Spec.Chart.Spec.Version, nvidiaDriver: hr.Spec.Values.Driver.NvidiaDriverCRD.Enabled}, true, nil
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if isGPUOperatorFile(n) && !yield(n) {
				return
			}
		}
	}) {
		if name == "helmrelease-"+GPUOperatorChart+".yaml" {
			continue
		}
		version := strings.TrimSuffix(strings.TrimPrefix(name, GPUOperatorChart+"-"), ".yaml")
		policy, ok := clusterPolicyDoc(files[name])
		if !ok {
			continue
		}
		var cp struct {
			Spec struct {
				Driver struct {
					UseNvidiaDriverCRD bool `json:"useNvidiaDriverCRD"`
				}
			}
		}
		if err := yaml.Unmarshal(policy, &cp); err != nil {
			return gpuOperatorState{}, false, fmt.Errorf("%s: ClusterPolicy: %w", name, err)
		}
		return gpuOperatorState{version: version, nvidiaDriver: cp.Spec.Driver.UseNvidiaDriverCRD}, true, nil
	}
	return gpuOperatorState{}, false, nil
}

// clusterPolicyDoc finds the ClusterPolicy among the documents of a
// rendered chart without decoding the others (the chart's CRDs make up
// most of it).
func clusterPolicyDoc(b []byte) ([]byte, bool) {
	for doc := range bytes.SplitSeq(b, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("\nkind: ClusterPolicy\n")) || bytes.HasPrefix(doc, []byte("kind: ClusterPolicy\n")) {
			return doc, true
		}
	}
	return nil, false
}

// NewUnadoptedClusters are the clusters of f that render writes into dir
// for the first time (nothing of theirs is there yet) with the GPU
// Operator below v26.7.0 in NVIDIADriver mode and no
// [clusters.<name>.gpu-operator] table. Such a render is right for a
// cluster without a GPU Operator, but applied to one that already runs it
// with its ClusterPolicy managing the drivers it deletes every driver pod
// at once; nothing in the output folder says which it is, so commands warn
// (see `gpufleet init`, which adopts a running operator).
func NewUnadoptedClusters(f *fleet.Fleet, dir string) ([]string, error) {
	var out []string
	for _, name := range f.ClusterNames() {
		c := f.Clusters[name]
		rel := f.ReleaseFor(name)
		if c.GPUOperator != nil || c.DriverManagement() != fleet.DriverManagementNVIDIADriver || rel == nil || !below(rel.GPUOperator, minOrphanMigration) {
			continue
		}
		ours, err := hasHeader(filepath.Join(dir, filepath.FromSlash(ClusterDir(name)), "kustomization.yaml"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		case ours:
			continue
		}
		out = append(out, name)
	}
	return out, nil
}
