package promote

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pelletier/go-toml/v2"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

func TestEditKeepsEverythingElse(t *testing.T) {
	src := `# header comment
[promotion]
stable = "r1"   # what runs everywhere
approved = [
  "r2/staging",   # approved by Ada
]
paused = false

[other]
x = 1
`
	old := fleet.Promotion{Stable: "r1", Approved: []string{"r2/staging"}}
	tests := []struct {
		name string
		new  fleet.Promotion
		want string
	}{
		{"nothing changes", old, src},
		{"a rollout line is added after the last key", fleet.Promotion{Stable: "r1", Approved: []string{"r2/staging"}, Rollout: &fleet.Rollout{Release: "r2", Wave: "prod", Stage: "canary"}}, `# header comment
[promotion]
stable = "r1"   # what runs everywhere
approved = [
  "r2/staging",   # approved by Ada
]
paused = false
rollout = { release = "r2", wave = "prod", stage = "canary" }

[other]
x = 1
`},
		{"a multi-line array is replaced whole, a trailing comment kept", fleet.Promotion{Stable: "r2", Approved: nil}, `# header comment
[promotion]
stable = "r2"   # what runs everywhere
approved = []
paused = false

[other]
x = 1
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Edit([]byte(src), old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEditNeedsPromotionTable(t *testing.T) {
	if _, err := Edit([]byte("[releases.r1]\n"), fleet.Promotion{}, fleet.Promotion{Stable: "r1"}); err == nil {
		t.Error("want an error for a file without [promotion]")
	}
}

// TestEditKeepsLineEndings runs every kind of edit (add a key, replace one,
// replace a multi-line array, delete one) on a CRLF file, an LF file and a
// file without a final newline: each keeps its own line endings, and the
// result parses.
func TestEditKeepsLineEndings(t *testing.T) {
	lf := "# fleet\n[promotion]\nstable = \"r1\"  # now\napproved = [\n  \"r2/a\",\n]\npaused = false"
	states := []fleet.Promotion{
		{Stable: "r1", Approved: []string{"r2/a"}},
		{Stable: "r1", Approved: []string{"r2/a"}, Rollout: &fleet.Rollout{Release: "r2", Wave: "a"}},
		{Stable: "r1", Approved: nil, Rollout: &fleet.Rollout{Release: "r2", Wave: "b", Stage: "canary"}, Paused: true},
		{Stable: "r2"},
	}
	for _, tt := range []struct {
		name, src, eol string
	}{
		{"crlf", strings.ReplaceAll(lf, "\n", "\r\n") + "\r\n", "\r\n"},
		{"lf", lf + "\n", "\n"},
		{"crlf without a final newline", strings.ReplaceAll(lf, "\n", "\r\n"), "\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(tt.src)
			for i := 1; i < len(states); i++ {
				got, err := Edit(src, states[i-1], states[i])
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(got), "\n")
				for n, l := range lines[:len(lines)-1] {
					if !strings.HasSuffix(l, tt.eol) || strings.Count(l, "\r") != strings.Count(tt.eol, "\r") {
						t.Fatalf("edit %d: line %d %q does not end in %q:\n%q", i, n+1, l, tt.eol, got)
					}
				}
				var p struct{ Promotion fleet.Promotion }
				if err := toml.Unmarshal(got, &p); err != nil {
					t.Fatalf("edit %d does not parse: %v\n%q", i, err, got)
				}
				if diff := cmp.Diff(states[i], p.Promotion, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("edit %d (-want +got):\n%s", i, diff)
				}
				src = got
			}
		})
	}
}
