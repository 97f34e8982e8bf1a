package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// TestInterruptStopsParsing: Ctrl-C while a command parses a large fleet
// file ends the command at once, whatever the parse still has to do.
func TestInterruptStopsParsing(t *testing.T) {
	var b strings.Builder
	b.WriteString("[charts]\n")
	for i := 0; b.Len() < fleet.MaxFileSize-64; i++ {
		fmt.Fprintf(&b, "key%d = %d\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	var out, errOut bytes.Buffer
	code := Run(ctx, []string{"render", "--check", "-f", path}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	took := time.Since(start)
	if code == ExitOK || !strings.Contains(errOut.String(), "context canceled") {
		t.Errorf("exit %d, stderr %q: want a failure saying it was cancelled", code, errOut.String())
	}
	// Reading 16 MB is part of it; parsing them takes several seconds.
	if took > 2*time.Second {
		t.Errorf("the command returned %v after the start, want within 2 s of the interrupt", took)
	}
}
