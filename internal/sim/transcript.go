package sim

import (
	"fmt"
	"strings"
)

// Transcript renders a run's lines, one per transition or world event, with
// the time, who, and the reason sentence: the text golden tests compare and
// `gpufleet simulate -v` prints.
func (r *Result) TranscriptText() string {
	var b strings.Builder
	width := 7
	for _, l := range r.Transcript {
		width = max(width, len(l.Who))
	}
	for _, l := range r.Transcript {
		fmt.Fprintf(&b, "%s  %-*s  %s\n", l.At.UTC().Format("Mon 2006-01-02 15:04:05"), width, l.Who, l.Text)
	}
	return b.String()
}
