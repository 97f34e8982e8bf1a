package fleet

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser: it may reject them, but it
// must never panic. The seed corpus is every fleet file under testdata/ and
// the example; `make fuzz` runs it for a minute.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.toml")
	seeds = append(seeds, "../../examples/fleet.toml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse("fuzz.toml", data)
		if err == nil {
			// A fleet that parses must be usable without panics.
			for _, c := range fl.ClusterNames() {
				_ = fl.PolicyFor(c)
				_ = fl.ReleaseFor(c)
			}
		}
	})
}
