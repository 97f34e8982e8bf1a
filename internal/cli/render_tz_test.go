package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tzFleet has freezes in both accepted forms (an offset, a local date-time
// with its time-zone) and a window in a named zone.
const tzFleet = smallFleet + `
[policy]
parallel-nodes = 2

[[policy.windows]]
days = ["Sat", "Sun"]
start = "22:00"
end = "06:00"
time-zone = "Europe/Berlin"

[[policy.freezes]]
start = 2026-12-21T00:00:00
end = 2027-01-04T00:00:00
time-zone = "America/New_York"
reason = "year-end"

[[policy.freezes]]
start = 2027-03-01T08:00:00-08:00
end = 2027-03-01T20:00:00Z
reason = "launch day"
`

// TestRenderBytesDoNotDependOnTZ renders one fleet file in processes with
// different TZ settings (the time package reads TZ once, at start, so each
// needs its own process) and compares every byte: render --check in CI must
// agree with a laptop anywhere. A freeze written without an offset or time
// zone is refused in every one of them.
func TestRenderBytesDoNotDependOnTZ(t *testing.T) {
	const child = "GPUFLEET_RENDER_TZ_CHILD"
	if spec := os.Getenv(child); spec != "" {
		fleetFile, out, _ := strings.Cut(spec, "|")
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), []string{"render", "-f", fleetFile, "-o", out}, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		fmt.Printf("exit %d\n%s", code, stderr.String())
		return
	}
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	zoned := write("zoned.toml", tzFleet)
	bare := write("bare.toml", strings.Replace(tzFleet, "time-zone = \"America/New_York\"\n", "", 1))
	renderIn := func(tz, fleetFile, out string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRenderBytesDoNotDependOnTZ$", "-test.count=1")
		cmd.Env = append(os.Environ(), child+"="+fleetFile+"|"+out, "TZ="+tz)
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("TZ=%s: %v\n%s", tz, err, got)
		}
		return string(got)
	}
	var first map[string]string
	for i, tz := range []string{"UTC", "Asia/Tokyo", "America/Los_Angeles", "Pacific/Kiritimati", "Europe/Berlin", ""} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
		if got := renderIn(tz, zoned, out); !strings.HasPrefix(got, "exit 0\n") {
			t.Fatalf("TZ=%q: render: %s", tz, got)
		}
		files := readTree(t, out)
		if !strings.Contains(files["clusters/stg/lifecycle/driverrollout.yaml"], "2026-12-21T05:00:00Z") {
			t.Errorf("TZ=%q: the DriverRollout lacks the year-end freeze at 05:00 UTC:\n%s", tz, files["clusters/stg/lifecycle/driverrollout.yaml"])
		}
		if first == nil {
			first = files
			continue
		}
		for name, b := range files {
			if first[name] != b {
				t.Errorf("TZ=%q renders %s differently from TZ=UTC", tz, name)
			}
		}
		if len(files) != len(first) {
			t.Errorf("TZ=%q renders %d files, TZ=UTC %d", tz, len(files), len(first))
		}

		got := renderIn(tz, bare, filepath.Join(dir, fmt.Sprintf("bare-%d", i)))
		if !strings.HasPrefix(got, "exit 1\n") || !strings.Contains(got, "policy.freezes[0].start: start 2026-12-21T00:00:00 has no offset") {
			t.Errorf("TZ=%q: a freeze without offset or time zone must be refused:\n%s", tz, got)
		}
	}
}

// readTree returns every file under dir by its slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
