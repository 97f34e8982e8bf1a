package controller

import (
	"context"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
)

// The cluster's ResourceSlices, read once a pass from the manager's cache:
// which nodes publish devices of a GPU DRA driver (they run the DRA
// kubelet plugin), the driver version those devices publish (a node
// validating a new driver waits until they publish it), and which node
// each pool is on (to place a claim whose allocation names no node).

// poolKey names a pool of one driver.
type poolKey struct{ driver, pool string }

// sliceView is one pass's reading of the slices.
type sliceView struct {
	// nodes publishing slices of a GPU DRA driver.
	nodes map[string]bool
	// versions are, by node, the driver versions those slices' devices
	// publish (v1alpha1.DRAAttributeDriverVersion), each once, sorted.
	versions map[string][]string
	// pools are the nodes of the node-local pools of every driver.
	pools map[poolKey]string
}

// readSlices reads the cluster's ResourceSlices for spec; nil, and no
// error, when the API server serves no resource.k8s.io/v1.
func (r *Reconciler) readSlices(ctx context.Context, spec *v1alpha1.DriverRolloutSpec) (*sliceView, error) {
	var list resourcev1.ResourceSliceList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list resource slices: %w", err)
	}
	v := &sliceView{nodes: map[string]bool{}, versions: map[string][]string{}, pools: map[poolKey]string{}}
	for i := range list.Items {
		s := &list.Items[i].Spec
		if s.NodeName == nil || *s.NodeName == "" {
			continue
		}
		node := *s.NodeName
		v.pools[poolKey{s.Driver, s.Pool.Name}] = node
		if !v1alpha1.IsDRADriver(spec, s.Driver) {
			continue
		}
		v.nodes[node] = true
		for j := range s.Devices {
			if ver := dra.DeviceDriverVersion(&s.Devices[j], s.Driver); ver != "" && !slices.Contains(v.versions[node], ver) {
				v.versions[node] = append(v.versions[node], ver)
			}
		}
	}
	for _, vs := range v.versions {
		slices.Sort(vs)
	}
	return v, nil
}
