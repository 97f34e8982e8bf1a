package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// FuzzRender feeds arbitrary fleet files to the parser and every one that
// parses to render: a fleet file the parser accepts must render or be
// refused with an error, never panic. The seed corpus is the fleet
// package's test files and the example.
//
//	go test -run '^$' -fuzz FuzzRender -fuzztime 60s ./internal/render/
func FuzzRender(f *testing.F) {
	seeds, _ := filepath.Glob("../fleet/testdata/*.toml")
	seeds = append(seeds, "../../examples/fleet.toml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := fleet.Parse("fuzz.toml", data)
		if err != nil || fl.Charts.Mode == fleet.ModeManifests {
			// The manifests mode needs the real charts: too slow to fuzz.
			return
		}
		out, err := Render(fl)
		if err == nil && out == nil {
			t.Fatal("Render returned neither output nor error")
		}
	})
}
