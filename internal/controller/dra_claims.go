package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/dra"
	"github.com/gpufleet/gpufleet/internal/planner"
)

// The cluster's ResourceClaims, read once a pass from the manager's cache
// (dynamic resource allocation, resource.k8s.io/v1): which claims hold a
// GPU (a device of one of spec.dra.drivers allocated), which of those are
// still allocated on each node and reserved for a consumer (the node's
// drain waits for them to be released), and the ComputeDomain each node's
// channel claims belong to.

// claimView is one pass's reading of the claims.
type claimView struct {
	// gpus counts, by "namespace/name", each claim's devices of a GPU
	// DRA driver; claims without any are left out.
	gpus map[string]int
	// held lists, by node, the GPU claims allocated there and reserved
	// for a consumer, as "namespace/name", sorted.
	held map[string][]string
	// domains are, by node, the ComputeDomain (its UID) of the channel
	// claims allocated there: the first in claim order where several.
	domains map[string]string
}

// GPUs implements planner.Claims.
func (v *claimView) GPUs(namespace, name string) int { return v.gpus[namespace+"/"+name] }

// claims is v as the planner's Claims: nil, when the claims were not read,
// makes any claim count as a GPU (planner.HoldsGPU).
func (v *claimView) claims() planner.Claims {
	if v == nil {
		return nil
	}
	return v
}

// readClaims reads the cluster's ResourceClaims for spec; nil, and no
// error, when the API server serves no resource.k8s.io/v1 (a cluster
// before Kubernetes 1.34): then nothing is known of claims.
func (r *Reconciler) readClaims(ctx context.Context, spec *v1alpha1.DriverRolloutSpec, pools map[poolKey]string) (*claimView, error) {
	var list resourcev1.ResourceClaimList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list resource claims: %w", err)
	}
	drivers := v1alpha1.DRADriversOf(spec)
	v := &claimView{gpus: map[string]int{}, held: map[string][]string{}, domains: map[string]string{}}
	slices.SortFunc(list.Items, func(a, b resourcev1.ResourceClaim) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range list.Items {
		c := &list.Items[i]
		n := planner.GPUDevices(c, drivers)
		if n == 0 {
			continue
		}
		key := c.Namespace + "/" + c.Name
		v.gpus[key] = n
		node := claimNode(c, pools)
		if node == "" {
			continue
		}
		if len(c.Status.ReservedFor) > 0 {
			v.held[node] = append(v.held[node], key)
		}
		if d := computeDomainOf(c); d != "" && v.domains[node] == "" {
			v.domains[node] = d
		}
	}
	return v, nil
}

// claimNode is the node claim c is allocated on: the one its allocation's
// node selector names (dra.AllocatedNode), else the node of the pool its
// first device came from (pools, from the ResourceSlices); empty when it is
// not allocated or not on one node.
func claimNode(c *resourcev1.ResourceClaim, pools map[poolKey]string) string {
	if n := dra.AllocatedNode(c); n != "" || c.Status.Allocation == nil {
		return n
	}
	for _, res := range c.Status.Allocation.Devices.Results {
		if n := pools[poolKey{res.Driver, res.Pool}]; n != "" {
			return n
		}
	}
	return ""
}

// channelConfig is the opaque configuration NVIDIA's ComputeDomain
// controller puts in the claim template of a ComputeDomain's channel
// (kind ComputeDomainChannelConfig): domainID is the ComputeDomain's UID.
type channelConfig struct {
	Kind     string `json:"kind"`
	DomainID string `json:"domainID"`
}

// computeDomainOf is the ComputeDomain whose channel claim c is: the
// domainID of its opaque configuration for compute-domain.nvidia.com, as
// allocated (status) or asked for (spec); empty for any other claim.
func computeDomainOf(c *resourcev1.ResourceClaim) string {
	var configs []resourcev1.DeviceConfiguration
	if a := c.Status.Allocation; a != nil {
		for _, cfg := range a.Devices.Config {
			configs = append(configs, cfg.DeviceConfiguration)
		}
	}
	for _, cfg := range c.Spec.Devices.Config {
		configs = append(configs, cfg.DeviceConfiguration)
	}
	for _, cfg := range configs {
		o := cfg.Opaque
		if o == nil || o.Driver != v1alpha1.DRADriverComputeDomain || len(o.Parameters.Raw) == 0 {
			continue
		}
		var cc channelConfig
		if err := json.Unmarshal(o.Parameters.Raw, &cc); err == nil && cc.Kind == "ComputeDomainChannelConfig" && cc.DomainID != "" {
			return cc.DomainID
		}
	}
	return ""
}
