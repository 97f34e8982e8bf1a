package planner

import (
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// What keeps one planning pass over tens of thousands of nodes cheap
// without changing what it decides: a pass's work slice is reused, and a
// node selector of labels alone is matched by looking the labels up.

// worksPool holds work slices between passes. Plan is pure: a slice goes
// back only once the pass is over, and nothing of it reaches the Result.
var worksPool = sync.Pool{New: func() any { return new([]work) }}

// getWorks returns an empty work slice with room for n.
func getWorks(n int) []work {
	w := *worksPool.Get().(*[]work)
	if cap(w) < n {
		return make([]work, 0, n)
	}
	return w[:0]
}

// release gives the pass's work slice back, cleared so that it keeps no
// node alive.
func (p *planner) release() {
	w := p.nodes
	clear(w) // beyond len, the slice was cleared when last given back
	w = w[:0]
	p.nodes = nil
	worksPool.Put(&w)
}

// equalityMatcher matches nodes to sel. A selector of matchLabels alone
// (the pool selectors render writes) is matched by looking up each label,
// as labels.Selector does, without its general requirement machinery: the
// match ran for every node of every pass.
// parsed says sel is ls (not labels.Nothing() for one that did not parse).
func equalityMatcher(ls *metav1.LabelSelector, sel labels.Selector, parsed bool) func(labels.Set) bool {
	return sameAsLast(matcherOf(ls, sel, parsed))
}

// sameAsLast remembers the answer for the last label set: nodes made from
// one set of labels (a pool's, as a simulation builds them) share one map,
// and their answer is the same.
func sameAsLast(match func(labels.Set) bool) func(labels.Set) bool {
	var last uintptr
	var answer bool
	return func(set labels.Set) bool {
		if set == nil {
			return match(set)
		}
		ptr := mapIdentity(set)
		if ptr != last {
			last, answer = ptr, match(set)
		}
		return answer
	}
}

// mapIdentity is the map a label set refers to, the value
// reflect.Value.Pointer returns for a map, without reflect's cost (it was a
// tenth of a simulation's time): a map variable holds exactly that pointer.
func mapIdentity(set labels.Set) uintptr {
	return *(*uintptr)(unsafe.Pointer(&set))
}

func matcherOf(ls *metav1.LabelSelector, sel labels.Selector, parsed bool) func(labels.Set) bool {
	if !parsed || len(ls.MatchExpressions) > 0 || len(ls.MatchLabels) == 0 {
		return func(set labels.Set) bool { return sel.Matches(set) }
	}
	if len(ls.MatchLabels) == 1 {
		for k, v := range ls.MatchLabels {
			return func(set labels.Set) bool {
				got, ok := set[k]
				return ok && got == v
			}
		}
	}
	return func(set labels.Set) bool {
		for k, v := range ls.MatchLabels {
			if got, ok := set[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
}
