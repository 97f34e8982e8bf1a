package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/gpufleet/gpufleet/internal/fleet/fleettest"
)

// indices matches the array indices a key names ("pools[0]").
var indices = regexp.MustCompile(`\[[0-9]+\]`)

// checkAgainstDecoder holds the first pass to what the decoder itself
// does with src: where the first pass finds no error, the decoder finds
// none but a key defined twice, and the keys it leaves undecoded are the
// unknown keys the first pass names and the keys below them.
func checkAgainstDecoder(t *testing.T, src []byte) {
	t.Helper()
	unknown, stop := checkFile(src)
	if stop != nil || checkShapes(src, &problemList{}) {
		return // a syntax, type or shape error: decoding stops before the decoder
	}
	var raw rawFile
	md, err := toml.Decode(string(src), &raw)
	if _, ok := errors.AsType[toml.ParseError](err); ok {
		// A key defined twice, or what the parsers disagree on (go-toml's
		// takes 0000- as a date): the decoder's to find, at its line.
		return
	}
	if err != nil {
		t.Fatalf("the first pass found nothing, the decoder: %v", err)
	}
	named := map[string]bool{}
	for _, k := range unknown {
		named[indices.ReplaceAllString(k.key, "")] = true
	}
	for _, k := range md.Undecoded() {
		key, found := keyString(k), false
		for p := key; p != ""; p = parentKey(p) {
			found = found || named[p]
		}
		if !found {
			t.Errorf("the decoder left %s undecoded, the first pass said nothing (unknown: %v)", key, unknown)
		}
	}
	undecoded := map[string]bool{} // and every table above them
	for _, k := range md.Undecoded() {
		for p := keyString(k); p != ""; p = parentKey(p) {
			undecoded[p] = true
		}
	}
	for k := range named {
		// The decoder also takes a key written in other letter cases
		// (Environment); the first pass does not, and Parse refuses it.
		if !undecoded[k] && k == strings.ToLower(k) {
			t.Errorf("the first pass named %s unknown, the decoder decoded it", k)
		}
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

// tricky are files that write one thing in several ways or wrongly.
var tricky = [][]byte{
	[]byte("[clusters.a]\nenvironment = \"x\"\n[waves]\n[clusters.a]\ncontext = \"y\"\n"),
	[]byte("[clusters.a]\nenvironment = \"x\"\n[[clusters.\"a\".pools]]\nname = \"p\"\n[[clusters.a.pools]]\nname = \"q\"\n"),
	[]byte("[clusters]\na = { environment = \"x\" }\n[clusters.a]\ncontext = \"y\"\n"),
	[]byte("[clusters]\nb.environment = \"x\"\n[clusters.a]\ncontext = \"y\"\n[clusters.b.pools]\n"),
	[]byte("[policy]\nenvironments.prod.soak = \"1h\"\n[policy.environments.prod]\nsoak = \"2h\"\n"),
	[]byte("[policy]\nenvironments = { prod = { soak = \"1h\" } }\n[policy.environments.staging]\nsoak = \"2h\"\n"),
	[]byte("[stack]\nservices.a.layer = \"engine\"\n[stack.services.a]\nnamespace = \"n\"\n"),
	[]byte("[clusters.a]\nenvironmen = \"x\"\n[[clusters.a.pools]]\nnam = \"p\"\n[clusters.b]\nfoo.bar = 1\n[nonsense.a]\nx = 1\n[policy]\nsoak-time = \"1h\"\n"),
	[]byte("[clusters.b]\nnodes = 1\n[clusters.a]\n[[clusters.a.pools]]\nnodes = \"x\"\n"),
	[]byte("[clusters.\"a b\"]\nenvironment = \"x\"\n[clusters.'c']\nenvironment = \"y\"\n[clusters.dd]\nenvironment = \"z\""),
	[]byte("clusters.a.environment = \"x\"\n[clusters.b]\nenvironment = \"y\"\n"),
	[]byte("[clusters.a.pools]\nname = \"p\"\n[[clusters.a.pools]]\nname = \"q\"\n[[policy]]\n"),
	[]byte("[[clusters.a]]\n[[waves]]\nname = \"w\"\n[waves.x]\n"),
	[]byte("[clusters.a]\nenvironment = \"x\"\n[clusters.b\n"),
	[]byte("[clusters.a]\r\nenvironment = \"x\"\r\n[[clusters.a.pools]]\r\nname = \"p\"\r\n[clusters.b]\r\nenvironment = 1\r\n"),
	[]byte("[clusters.a]\npools = [{name = \"p\", nodez = 1}, {name = \"q\"}]\nlabels = {x = \"y\"}\n"),
	[]byte("[[policy.freezes]]\nstart = 2026-12-21T00:00:00Z\nend = 2026-12-22\n"),
	[]byte("[clusters.a]\nenvironment.x = 1\n"),
}

func TestFirstPassAgreesWithTheDecoder(t *testing.T) {
	seeds := append(decodeSeeds(t), fleettest.Fleet(t, fleettest.Options{Clusters: 30, Rollout: true}))
	for i, src := range seeds {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkAgainstDecoder(t, src) })
	}
}

// FuzzDecode: whatever the input, the first pass and the decoder agree
// (see checkAgainstDecoder), and neither panics.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkAgainstDecoder(t, data) })
}

func TestUnknownKeysAreNamedWithTheirElement(t *testing.T) {
	src := []byte("[clusters.prod-a]\nenvironment = \"prod\"\n[[clusters.prod-a.pools]]\nname = \"p\"\n[[clusters.prod-a.pools]]\nname = \"q\"\nnodez = 1\n" +
		"[clusters.stg]\npools = [{name = \"r\", nodez = 2}]\n")
	unknown, stop := checkFile(src)
	if stop != nil {
		t.Fatal(stop)
	}
	var raw rawFile
	if stop := decodeChecked(src, &raw); stop != nil {
		t.Fatal(stop)
	}
	var got []string
	for _, k := range unknown {
		got = append(got, fmt.Sprintf("%d:%d %s", k.line, k.col, k.key))
	}
	want := []string{"7:1 clusters.prod-a.pools[1].nodez", "9:23 clusters.stg.pools[0].nodez"}
	if !slices.Equal(got, want) {
		t.Errorf("unknown keys %q, want %q", got, want)
	}
	if len(raw.Clusters["prod-a"].Pools) != 2 || raw.Clusters["stg"].Pools[0].Name != "r" {
		t.Errorf("clusters decoded as %+v", raw.Clusters)
	}
}

// TestParseBoundsTheInput: a file over MaxFileSize is refused before it
// is parsed, by Load and by Parse.
func TestParseBoundsTheInput(t *testing.T) {
	big := []byte("[charts]\n" + strings.Repeat("# padding\n", MaxFileSize/10+1))
	path := filepath.Join(t.TempDir(), "fleet.toml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, errLoad := Load(path)
	_, errParse := Parse("fleet.toml", big)
	for _, err := range []error{errLoad, errParse} {
		var probs Problems
		if !errors.As(err, &probs) || !strings.Contains(err.Error(), ":1:1: the file is larger than 16 MB") {
			t.Errorf("got %v, want the size refused at 1:1", err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusing took %v: the file was read whole", d)
	}
}

// TestParseContextReturnsWhenCancelled: a command interrupted while it
// parses returns at once with the cause.
func TestParseContextReturnsWhenCancelled(t *testing.T) {
	src := largeTable(200_000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ParseContext(ctx, "fleet.toml", src)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Skip("the parse finished before the cancel") // fast machine: nothing to interrupt
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(time.Second):
		t.Fatal("ParseContext did not return within a second of the cancel")
	}
}

// largeTable is a valid fleet whose [charts] table... holds n unknown
// keys: one table with many keys, as a hostile change could write.
func largeTable(n int) []byte {
	var b strings.Builder
	b.WriteString("[charts]\n")
	for i := range n {
		fmt.Fprintf(&b, "k%d = %d\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkParseLargeTable: one table of 100,000 keys (docs/performance.md).
func BenchmarkParseLargeTable(b *testing.B) {
	src := largeTable(100_000)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("fleet.toml", src); err == nil {
			b.Fatal("100,000 unknown keys parsed as valid")
		}
	}
}

// TestKeyDefinedTwiceIsPlaced: the decoder's own finding, at its line.
func TestKeyDefinedTwiceIsPlaced(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	src := strings.Replace(base, "[clusters.prod-b]\n", "[clusters.prod-b]\nenvironment = \"staging\"\n", 1)
	_, err := Parse("f.toml", []byte(src))
	if err == nil || !strings.HasPrefix(err.Error(), "f.toml:30:1: clusters.prod-b.environment: ") || !strings.Contains(err.Error(), "'clusters.prod-b.environment' has already been defined") {
		t.Errorf("got %v, want the second environment of prod-b refused at line 30, where it is defined again", err)
	}
}
