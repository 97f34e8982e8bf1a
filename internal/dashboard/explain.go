package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/internal/explain"
)

// ExplainLibrary is the Explainer of the explain library: it reads the
// cluster through its own client (explain.Options.Run), which is why the
// dashboard asks it at most once per 30 s per cluster, and only about
// clusters the gate does not pass.
type ExplainLibrary struct{}

// Explain implements Explainer.
func (ExplainLibrary) Explain(ctx context.Context, q ExplainQuery) (*Explanation, error) {
	a, err := explain.Options{Fleet: q.Fleet, Cluster: q.Cluster, Revision: q.Revision, Kubeconfig: q.Kubeconfig}.Run(ctx)
	if err != nil {
		return nil, err
	}
	ex := &Explanation{Verdict: string(a.Verdict), Summary: a.Summary, Answer: a}
	if l := a.At; l != nil {
		obj := strings.TrimPrefix(fmt.Sprintf("%s %s/%s", l.Object.Kind, l.Object.Namespace, l.Object.Name), "/")
		obj = strings.Replace(obj, " /", " ", 1)
		ex.At = fmt.Sprintf("%s %s (%s): %s", l.Step, obj, l.State, cmp.Or(l.Message, l.Observed))
		ex.Next = l.Next
	}
	return ex, nil
}
