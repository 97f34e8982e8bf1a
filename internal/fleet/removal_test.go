package fleet

import (
	"strings"
	"testing"
)

// minimalEdit is testdata/minimal.toml with each edit (old, new) applied
// once; a test whose edit no longer matches fails rather than testing the
// file unchanged.
func minimalEdit(t *testing.T, edits ...[2]string) string {
	t.Helper()
	s := mustRead(t, "testdata/minimal.toml")
	for _, e := range edits {
		if !strings.Contains(s, e[0]) {
			t.Fatalf("testdata/minimal.toml no longer has %q", e[0])
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	return s
}

// The lines of testdata/minimal.toml the tests below edit: r1 (lines 1-4)
// is stable and runs Network Operator v25.4.0, r2 (lines 6-9) v25.10.0.
var (
	r1NetOp   = [2]string{`network-operator = "v25.4.0"` + "\n", ""}
	r2NetOp   = [2]string{`network-operator = "v25.10.0"` + "\n", ""}
	r2None    = [2]string{`network-operator = "v25.10.0"`, `network-operator = "none"`}
	r2Rollout = [2]string{`stable = "r1"`, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }"}
)

// TestEmptyVersionsRefused: a version key written with an empty value is
// refused at the key itself, with file, line and column, and says what to
// write; for network-operator that includes "none". It is not also
// reported as missing.
func TestEmptyVersionsRefused(t *testing.T) {
	const netWant = `network-operator is empty: write the Network Operator's chart version, such as v25.4.0, or network-operator = "none" for a release that runs none (and removes it from the clusters it reaches)`
	tests := []struct {
		name  string
		edits [][2]string
		want  []string
	}{
		{
			name:  "network-operator",
			edits: [][2]string{{`network-operator = "v25.10.0"`, `network-operator = ""`}},
			want:  []string{`f.toml:8:1: releases.r2.network-operator: ` + netWant},
		},
		{
			name:  "network-operator of the release being rolled out",
			edits: [][2]string{{`network-operator = "v25.10.0"`, `network-operator = ""`}, r2Rollout},
			want:  []string{`f.toml:8:1: releases.r2.network-operator: ` + netWant},
		},
		{
			name:  "gpu-operator",
			edits: [][2]string{{`gpu-operator = "v25.10.1"`, `gpu-operator = ""`}},
			want:  []string{`f.toml:7:1: releases.r2.gpu-operator: gpu-operator is empty: write the GPU Operator's chart version, such as v25.10.1`},
		},
		{
			name:  "driver",
			edits: [][2]string{{`driver = "580.95.05"`, `driver = ""`}},
			want:  []string{`f.toml:9:1: releases.r2.driver: driver is empty: write a driver version such as 580.95.05`},
		},
		{
			name:  "a precompiled driver",
			edits: [][2]string{{`driver = "580.95.05"`, "driver = \"\"\nprecompiled = true"}},
			want:  []string{`f.toml:9:1: releases.r2.driver: driver is empty: write a driver branch such as "570" (precompiled = true)`},
		},
		{
			name: "all three, each at its key",
			edits: [][2]string{
				{`gpu-operator = "v25.3.4"`, `gpu-operator = ""`},
				{`network-operator = "v25.4.0"`, `network-operator = ""`},
				{`driver = "570.172.08"`, `driver = ""`},
			},
			want: []string{
				`f.toml:2:1: releases.r1.gpu-operator: gpu-operator is empty: write the GPU Operator's chart version, such as v25.10.1`,
				`f.toml:3:1: releases.r1.network-operator: ` + netWant,
				`f.toml:4:1: releases.r1.driver: driver is empty: write a driver version such as 580.95.05`,
			},
		},
		{
			name:  "in an inline table",
			edits: [][2]string{{"[releases.r1]\n", "[releases]\nr0 = { gpu-operator = \"v25.3.4\", driver = \"\" }\n\n[releases.r1]\n"}},
			want:  []string{`f.toml:2:34: releases.r0.driver: driver is empty: write a driver version such as 580.95.05`},
		},
		{
			name:  "None is not none",
			edits: [][2]string{{`network-operator = "v25.10.0"`, `network-operator = "None"`}},
			want:  []string{`f.toml:8:1: releases.r2.network-operator: "None" is not a chart version such as v25.4.0, or "none" for a release that runs no Network Operator`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantProblems(t, minimalEdit(t, tt.edits...), tt.want) })
	}
}

// TestNetworkOperatorRemovedOnPurpose: a rollout whose release leaves
// network-operator out while the stable release runs one is refused at the
// release, naming the version the clusters would lose; "none" says it on
// purpose. A fleet where no release the clusters run has one needs no
// "none".
func TestNetworkOperatorRemovedOnPurpose(t *testing.T) {
	t.Run("left out while the stable release runs one", func(t *testing.T) {
		wantProblems(t, minimalEdit(t, r2NetOp, r2Rollout), []string{
			`f.toml:6:2: releases.r2: network-operator is left out of release r2, but the clusters run network-operator v25.4.0 (r1, the stable release): rolling r2 out would remove it from every cluster it reaches; name the version to keep, or write network-operator = "none" to remove it on purpose`,
		})
	})
	t.Run(`"none" is accepted and runs none`, func(t *testing.T) {
		f, err := Parse("f.toml", []byte(minimalEdit(t, r2None, r2Rollout)))
		if err != nil {
			t.Fatal(err)
		}
		if r := f.Releases["r2"]; r.RunsNetworkOperator() || r.NetworkOperator != NoNetworkOperator {
			t.Errorf("r2: network-operator %q, runs it %t; want %q, false", r.NetworkOperator, r.RunsNetworkOperator(), NoNetworkOperator)
		}
		if !f.Releases["r1"].RunsNetworkOperator() {
			t.Error("r1 names v25.4.0, yet runs no Network Operator")
		}
		if why := f.Downgrade("r2"); len(why) != 0 {
			t.Errorf(`"none" is a removal, not a downgrade: %v`, why)
		}
	})
	for name, edits := range map[string][][2]string{
		// A fleet adopted from clusters without the operator.
		"no release has one": {r1NetOp, r2NetOp, r2Rollout},
		"the stable release has none, the rollout adds one":     {r1NetOp, r2Rollout},
		"none said by the stable release, the rollout adds one": {{`network-operator = "v25.4.0"`, `network-operator = "none"`}, r2Rollout},
		// Its clusters go back to the stable release, which keeps its own.
		"an aborted rollout of a release that leaves it out": {r2NetOp, {`stable = "r1"`, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\", aborted = true }"}},
	} {
		t.Run(name+" is accepted", func(t *testing.T) {
			if _, err := Parse("f.toml", []byte(minimalEdit(t, edits...))); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("a release not rolled out may leave it out until it is started", func(t *testing.T) {
		f, err := Parse("f.toml", []byte(minimalEdit(t, r2NetOp)))
		if err != nil {
			t.Fatal(err)
		}
		if why := f.NetworkOperatorLeftOut(f.Releases["r2"]); !strings.Contains(why, "network-operator is left out of release r2, but the clusters run network-operator v25.4.0 (r1, the stable release)") {
			t.Errorf("NetworkOperatorLeftOut(r2) = %q", why)
		}
		if why := f.NetworkOperatorLeftOut(f.Releases["r1"]); why != "" {
			t.Errorf("r1 names a version, yet NetworkOperatorLeftOut says %q", why)
		}
	})
}
