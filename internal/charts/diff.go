package charts

import (
	"context"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
)

// DiffCRDs loads chart name at versions a and b from src and lists how the
// schemas of the CRDs it ships changed from a to b (see crdcheck.Diff).
func DiffCRDs(ctx context.Context, src Source, name, a, b string) ([]crdcheck.Change, error) {
	ca, err := src.Load(ctx, name, a)
	if err != nil {
		return nil, err
	}
	cb, err := src.Load(ctx, name, b)
	if err != nil {
		return nil, err
	}
	crdsA, err := CRDs(ca)
	if err != nil {
		return nil, err
	}
	crdsB, err := CRDs(cb)
	if err != nil {
		return nil, err
	}
	changes := crdcheck.Diff(dedupeCRDs(crdsA), dedupeCRDs(crdsB))
	if changes == nil {
		changes = []crdcheck.Change{}
	}
	return changes, nil
}
