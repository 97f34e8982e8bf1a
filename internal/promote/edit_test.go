package promote

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
