package dashboard

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// missTTL is how long a kind the cluster does not serve is taken as
// absent before the cluster's discovery is asked again.
const missTTL = 30 * time.Second

// rememberMisses is a RESTMapper that remembers, for missTTL, the kinds
// the cluster did not know. controller-runtime's dynamic mapper asks the
// cluster's discovery again on every miss, and the gate reads every kind
// on every rebuild: a cluster without Flux or the GPU Operator yet would
// cost several discovery requests per rebuild (measured: 118 requests a
// cluster a minute while nodes changed), the CPU of parsing them, and the
// same again for each of 200 clusters.
type rememberMisses struct {
	meta.RESTMapper
	now func() time.Time

	mu     sync.Mutex
	misses map[schema.GroupKind]time.Time
}

func newRememberMisses(m meta.RESTMapper, now func() time.Time) *rememberMisses {
	return &rememberMisses{RESTMapper: m, now: now, misses: map[schema.GroupKind]time.Time{}}
}

// RESTMapping is the mapping the cache and the client ask for.
func (m *rememberMisses) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	at, missed := m.misses[gk]
	m.mu.Unlock()
	if missed && m.now().Sub(at) < missTTL {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if meta.IsNoMatchError(err) {
		m.misses[gk] = m.now()
	} else {
		delete(m.misses, gk)
	}
	return mapping, err
}
