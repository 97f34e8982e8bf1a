package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// checkDecodeObject holds decodeObject to json.Unmarshal for j: when it
// reads j at all, it reads what json.Unmarshal reads.
func checkDecodeObject(t *testing.T, name string, j []byte) bool {
	t.Helper()
	got, ok := decodeObject(j)
	var want map[string]any
	err := json.Unmarshal(j, &want)
	if ok && (err != nil || !reflect.DeepEqual(got, want)) {
		t.Errorf("%s: decodeObject read %#v, json.Unmarshal %#v (%v)", name, got, want, err)
	}
	return ok
}

// jsonSeeds are the objects render writes for the example and a synthetic
// fleet, as JSON, and edge cases.
func jsonSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(`{}`), []byte(` {"a" : [ ] , "b":{}}`), []byte(`{"a":-0.5e+3,"b":[1,2.25,-0,1E2],"c":null,"d":true,"e":false}`),
		[]byte(`{"a":"x\"y"}`), []byte(`{"a":"\u0026"}`), []byte(`{"a":"é"}`), []byte(`{"a":01}`), []byte(`{"a":1.}`),
		[]byte(`{"a":1,"a":2}`), []byte(`[1]`), []byte(`{"a":1}x`), []byte(`{"a":[{"b":[[]]}]}`), []byte(`{"a":1e400}`),
		[]byte(`{"a":"`), []byte(`{"a":tru}`), []byte(`{"a" 1}`), []byte(`{"a":1,}`), []byte(`{"a":[1,]}`),
	}
	example, err := fleet.Load("../../examples/fleet.toml")
	if err != nil {
		t.Fatal(err)
	}
	synthetic, err := fleet.Parse("fleet.toml", fleettest.Fleet(t, fleettest.Options{Clusters: 12, Rollout: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fleet.Fleet{example, synthetic} {
		out, err := Render(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range out.Paths() {
			if !strings.HasSuffix(p, ".yaml") {
				continue
			}
			j, err := yaml.YAMLToJSON(bytes.TrimPrefix(out.Files[p], []byte(Header)))
			if err == nil && bytes.HasPrefix(j, []byte("{")) {
				seeds = append(seeds, j)
			}
		}
	}
	return seeds
}

func TestDecodeObjectIsUnmarshal(t *testing.T) {
	read := 0
	seeds := jsonSeeds(t)
	for _, j := range seeds {
		if checkDecodeObject(t, string(j[:min(len(j), 60)]), j) {
			read++
		}
	}
	if read < len(seeds)/2 {
		t.Errorf("decodeObject read only %d of %d objects: render would gain nothing", read, len(seeds))
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, j := range jsonSeeds(f) {
		f.Add(j)
	}
	f.Fuzz(func(t *testing.T, j []byte) { checkDecodeObject(t, "fuzz", j) })
}
