package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes the answer as indented JSON (see docs/schema/explain.schema.json).
func WriteJSON(w io.Writer, a *Answer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// TextOptions say how much WriteText shows.
type TextOptions struct {
	// Verbose lists every link walked, not only those up to the deciding one.
	Verbose bool
}

// WriteText writes the answer for people: the chain up to the deciding
// link (every link with Verbose), then the deciding link with its object,
// condition and next command.
func WriteText(w io.Writer, a *Answer, o TextOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s", a.Cluster)
	if a.Context != "" && a.Context != a.Cluster {
		fmt.Fprintf(&b, " (context %s)", a.Context)
	}
	fmt.Fprintf(&b, ": release %s, driver %s%s\n\n", a.Release, a.Driver, atRevision(a.Revision))
	for i, l := range a.Chain {
		if !o.Verbose && a.At != nil && i > indexOf(a, a.At) {
			fmt.Fprintf(&b, "  …     %d more link(s) after it (-v lists them)\n", len(a.Chain)-i)
			break
		}
		mark := map[State]string{OK: "ok", InProgress: "wait", BrokenState: "FAIL"}[l.State]
		fmt.Fprintf(&b, "  %-5s %-18s %s %s", mark, l.Step, l.Object.Kind, l.Object.ref())
		if l.Observed != "" {
			fmt.Fprintf(&b, "  (%s)", l.Observed)
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	switch {
	case a.At == nil:
		fmt.Fprintf(&b, "%s\n", a.Summary)
	default:
		l := a.At
		head := "BROKEN"
		if a.Verdict == Progressing {
			head = "PROGRESSING"
		}
		fmt.Fprintf(&b, "%s at %s: %s %s\n", head, l.Step, l.Object.Kind, l.Object.ref())
		fmt.Fprintf(&b, "  %s\n", l.Message)
		if c := l.Condition; c != nil {
			fmt.Fprintf(&b, "  condition: %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				fmt.Fprintf(&b, " (%s)", c.Reason)
			}
			if c.Message != "" {
				fmt.Fprintf(&b, ": %s", c.Message)
			}
			b.WriteByte('\n')
		}
		if l.Next != "" {
			fmt.Fprintf(&b, "  next:      %s\n", l.Next)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// indexOf finds l in the chain: by identity, or for an answer read back
// from JSON (where At is a copy) by step and object.
func indexOf(a *Answer, l *Link) int {
	for i := range a.Chain {
		if c := &a.Chain[i]; c == l || c.Step == l.Step && c.Object == l.Object && c.State == l.State {
			return i
		}
	}
	return len(a.Chain)
}
