package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pelletier/go-toml/v2"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// decodeBoth decodes src in parts and whole and reports any difference:
// decoding in parts must be invisible.
func decodeBoth(t *testing.T, src []byte) {
	t.Helper()
	var parts, whole rawFile
	pk, perr := decodeFile(src, &parts)
	wk, werr := decodeWhole(src, &whole)
	if fmt.Sprint(perr) != fmt.Sprint(werr) {
		t.Fatalf("error in parts %v, whole %v", perr, werr)
	}
	if perr != nil {
		return
	}
	// go-toml reports unknown keys in the order it meets them.
	sortKeys := func(ks []unknownKey) []string {
		var out []string
		for _, k := range ks {
			out = append(out, fmt.Sprintf("%d:%d:%s", k.line, k.col, strings.Join(k.key, ".")))
		}
		return out
	}
	if diff := cmp.Diff(sortKeys(wk), sortKeys(pk), cmp.Transformer("sort", func(s []string) map[string]int {
		m := map[string]int{}
		for _, x := range s {
			m[x]++
		}
		return m
	})); diff != "" {
		t.Errorf("unknown keys (-whole +parts):\n%s", diff)
	}
	if !reflect.DeepEqual(parts, whole) {
		t.Errorf("decoded differently:\n%s", cmp.Diff(whole, parts, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
}

func decodeSeeds(t testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/*.toml")
	files = append(files, "../../examples/fleet.toml")
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out, tricky...)
}

// tricky are files whose tables meet across parts: each must be decoded as
// the whole file is (the same error, or the same result).
var tricky = [][]byte{
	// A cluster defined twice, far apart.
	[]byte("[clusters.a]\nenvironment = \"x\"\n[waves]\n[clusters.a]\ncontext = \"y\"\n"),
	// A cluster written once bare and once quoted.
	[]byte("[clusters.a]\nenvironment = \"x\"\n[[clusters.\"a\".pools]]\nname = \"p\"\n[[clusters.a.pools]]\nname = \"q\"\n"),
	// The clusters map as a table, then an entry as a header.
	[]byte("[clusters]\na = { environment = \"x\" }\n[clusters.a]\ncontext = \"y\"\n"),
	[]byte("[clusters]\nb.environment = \"x\"\n[clusters.a]\ncontext = \"y\"\n[clusters.b.pools]\n"),
	// A policy override written from [policy] by a dotted key and by an
	// inline table, and again as a header.
	[]byte("[policy]\nenvironments.prod.soak = \"1h\"\n[policy.environments.prod]\nsoak = \"2h\"\n"),
	[]byte("[policy]\nenvironments = { prod = { soak = \"1h\" } }\n[policy.environments.staging]\nsoak = \"2h\"\n"),
	[]byte("[stack]\nservices.a.layer = \"engine\"\n[stack.services.a]\nnamespace = \"n\"\n"),
	[]byte("[stack.services.a]\nlayer = \"engine\"\n[stack]\nservices = {}\n"),
	// Unknown keys in entries and elsewhere, and an unknown table.
	[]byte("[clusters.a]\nenvironmen = \"x\"\n[[clusters.a.pools]]\nnam = \"p\"\n[clusters.b]\nfoo.bar = 1\n[nonsense.a]\nx = 1\n[policy]\nsoak-time = \"1h\"\n"),
	// A type error after an unknown key, in another part.
	[]byte("[clusters.b]\nnodes = 1\n[clusters.a]\n[[clusters.a.pools]]\nnodes = \"x\"\n"),
	// Names of different lengths and quotes, and a last line with no break.
	[]byte("[clusters.\"a b\"]\nenvironment = \"x\"\n[clusters.'c']\nenvironment = \"y\"\n[clusters.dd]\nenvironment = \"z\""),
	// Keys at the top level.
	[]byte("clusters.a.environment = \"x\"\n[clusters.b]\nenvironment = \"y\"\n"),
	// A table as a list and a list as a table.
	[]byte("[clusters.a.pools]\nname = \"p\"\n[[clusters.a.pools]]\nname = \"q\"\n[[policy]]\n"),
	[]byte("[[clusters.a]]\n[[waves]]\nname = \"w\"\n[waves.x]\n"),
	// Syntax error late in the file.
	[]byte("[clusters.a]\nenvironment = \"x\"\n[clusters.b\n"),
	// CRLF line ends.
	[]byte("[clusters.a]\r\nenvironment = \"x\"\r\n[[clusters.a.pools]]\r\nname = \"p\"\r\n[clusters.b]\r\nenvironment = 1\r\n"),
}

func TestDecodeInPartsIsDecodingWhole(t *testing.T) {
	seeds := append(decodeSeeds(t), fleettest.Fleet(t, fleettest.Options{Clusters: 30, Rollout: true}))
	for i, src := range seeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { decodeBoth(t, src) })
	}
}

// FuzzDecodeParts: whatever the input, decoding in parts gives what one
// decode of the whole file gives.
func FuzzDecodeParts(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, data) })
}

// TestUnknownKeyInAnEntryNamesTheEntry: the stand-in name an entry is
// decoded under never shows in a message.
func TestUnknownKeyInAnEntryNamesTheEntry(t *testing.T) {
	src := []byte("[clusters.prod-a]\nenvironment = \"prod\"\n[[clusters.prod-a.pools]]\nname = \"p\"\nnodez = 1\n[clusters.stg]\nenvironment = \"stg\"\n")
	var raw rawFile
	keys, err := decodeFile(src, &raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || !reflect.DeepEqual(keys[0].key, toml.Key{"clusters", "prod-a", "pools", "nodez"}) || keys[0].line != 5 {
		t.Errorf("unknown keys %+v", keys)
	}
	if raw.Clusters["prod-a"] == nil || raw.Clusters["stg"] == nil || len(raw.Clusters) != 2 {
		t.Errorf("clusters %v", raw.Clusters)
	}
}
