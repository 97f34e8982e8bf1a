package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const exampleFleet = "../../examples/fleet.toml"

func renderFile(t testing.TB, path string) *Output {
	t.Helper()
	f, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGoldenExample compares the whole render of the example fleet with
// testdata/golden; `go test ./internal/render -update` regenerates it.
func TestGoldenExample(t *testing.T) {
	matchGolden(t, renderFile(t, exampleFleet), filepath.Join("testdata", "golden"))
}

// matchGolden compares a whole render with the tree of files in folder
// golden; with -update it first writes that tree anew.
func matchGolden(t *testing.T, out *Output, golden string) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for p, b := range out.Files {
			dst := filepath.Join(golden, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := map[string]string{}
	for p, b := range out.Files {
		got[p] = string(b)
	}
	if diff := cmp.Diff(readTree(t, golden), got); diff != "" {
		t.Errorf("render differs from %s (-want +got); run with -update if intended:\n%s", golden, diff)
	}
}

func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDeterministic renders the example twice, and once from a copy whose
// tables and keys are written in another order: the bytes are identical.
func TestDeterministic(t *testing.T) {
	a := renderFile(t, exampleFleet)
	b := renderFile(t, exampleFleet)
	shuffled := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(shuffled, []byte(reorderTables(t, exampleFleet)), 0o644); err != nil {
		t.Fatal(err)
	}
	if reordered, _ := os.ReadFile(shuffled); bytes.Equal(reordered, mustReadFile(t, exampleFleet)) {
		t.Fatal("the reordered fleet file is the same as the original: the test would prove nothing")
	}
	c := renderFile(t, shuffled)
	for name, other := range map[string]*Output{"second render": b, "reordered fleet file": c} {
		if diff := cmp.Diff(a.Files, other.Files); diff != "" {
			t.Errorf("%s differs (-first +%s):\n%s", name, name, diff)
		}
	}
}

// reorderTables writes the fleet file's top-level [tables] in reverse order
// and the keys inside each in reverse order too ([[arrays]] keep their
// order: their order is meaningful).
func reorderTables(t testing.TB, path string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, "\n"))
		}
		cur = nil
	}
	for line := range strings.SplitSeq(string(src), "\n") {
		if strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "[[") {
			flush()
		}
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		cur = append(cur, line)
	}
	flush()
	var out []string
	var arrays []string
	for _, block := range slices.Backward(blocks) {
		lines := strings.Split(block, "\n")
		// A block that holds [[arrays]] keeps its order and stays last.
		if strings.Contains(block, "\n[[") || strings.HasPrefix(block, "[[") {
			arrays = append([]string{block}, arrays...)
			continue
		}
		head, keys := lines[0], lines[1:]
		for l, r := 0, len(keys)-1; l < r; l, r = l+1, r-1 {
			keys[l], keys[r] = keys[r], keys[l]
		}
		out = append(out, head+"\n"+strings.Join(keys, "\n"))
	}
	return strings.Join(append(out, arrays...), "\n\n") + "\n"
}

func TestEveryFileHasHeader(t *testing.T) {
	for p, b := range renderFile(t, exampleFleet).Files {
		if !bytes.HasPrefix(b, []byte(Header)) {
			t.Errorf("%s does not start with the generated-by header", p)
		}
	}
}

func mustReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
