package fleet

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wantProblems parses src as f.toml and wants exactly the problems want,
// each as Problem.String says it.
func wantProblems(t *testing.T, src string, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, problemStrings(t, src)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// problemStrings parses src and returns its problems as strings; it fails
// the test when src parses.
func problemStrings(t *testing.T, src string) []string {
	t.Helper()
	_, err := Parse("f.toml", []byte(src))
	var probs Problems
	if !errors.As(err, &probs) {
		t.Fatalf("want Problems, got %v", err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	if os.Getenv("DUMP") != "" {
		for _, g := range got {
			t.Logf("%q", g)
		}
	}
	return got
}

// TestListOfTablesWrittenAsOneTable: a list of tables ([[clusters.x.pools]],
// [[policy.freezes]]) written as one table, or made one by a longer header or
// a dotted key, is refused where it is written; the decoder alone would
// read it as a list of one.
func TestListOfTablesWrittenAsOneTable(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{
			name: "pools as a table",
			edit: func(s string) string { return strings.Replace(s, "[[clusters.stg.pools]]", "[clusters.stg.pools]", 1) },
			want: []string{
				`f.toml:14:2: clusters.stg.pools: pools is a list of tables: write [[clusters.stg.pools]] (double brackets) for each entry, not [clusters.stg.pools]`,
			},
		},
		{
			name: "pools made a table by a longer header",
			edit: func(s string) string {
				return strings.Replace(s, "[[clusters.stg.pools]]\nname = \"h100\"", "[clusters.stg.pools.h100]\nname = \"h100\"", 1)
			},
			want: []string{
				`f.toml:14:2: clusters.stg.pools: pools is a list of tables, but [clusters.stg.pools.h100] makes it one table: open each entry with [[clusters.stg.pools]]`,
				`f.toml:14:2: clusters.stg.pools.h100: unknown key`,
			},
		},
		{
			name: "pools made a table by dotted keys",
			edit: func(s string) string {
				return strings.Replace(s, "environment = \"staging\"\n\n[[clusters.stg.pools]]\nname = \"h100\"\nproduct = \"NVIDIA-H100-80GB-HBM3\"\nnodes = 4\n",
					"environment = \"staging\"\npools.name = \"h100\"\npools.product = \"NVIDIA-H100-80GB-HBM3\"\npools.nodes = 4\n", 1)
			},
			want: []string{
				`f.toml:13:1: clusters.stg.pools: pools is a list of tables, but the dotted key pools.name makes it one table: open each entry with [[clusters.stg.pools]]`,
			},
		},
		{
			name: "freezes as a table",
			edit: func(s string) string {
				return strings.Replace(s, "[promotion]", "[policy.freezes]\nstart = 2026-12-21T00:00:00Z\nend = 2027-01-04T00:00:00Z\n\n[promotion]", 1)
			},
			want: []string{
				`f.toml:50:2: policy.freezes: freezes is a list of tables: write [[policy.freezes]] (double brackets) for each entry, not [policy.freezes]`,
			},
		},
		{
			name: "one table written as a list",
			edit: func(s string) string { return strings.Replace(s, "[policy]", "[[policy]]", 1) },
			want: []string{
				`f.toml:47:3: policy: policy is one table: write [policy], not [[policy]]`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, problemStrings(t, tt.edit(base))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryProblemHasAPosition: every problem reads file:line:col, a problem
// of the whole file (an empty or comments-only file) at line 1.
func TestEveryProblemHasAPosition(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	inputs := map[string]string{
		"empty":            "",
		"comments only":    "# a fleet file\n\n# nothing yet\n",
		"blank lines":      "\n\n\n",
		"no releases":      base[strings.Index(base, "[clusters.stg]"):],
		"no promotion":     base[:strings.Index(base, "[promotion]")],
		"pools as table":   strings.Replace(base, "[[clusters.stg.pools]]", "[clusters.stg.pools]", 1),
		"only a promotion": "[promotion]\nstable = \"r1\"\n",
	}
	placed := regexp.MustCompile(`^f\.toml:[1-9][0-9]*:[1-9][0-9]*: `)
	for name, src := range inputs {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("f.toml", []byte(src))
			var probs Problems
			if !errors.As(err, &probs) {
				t.Fatalf("want Problems, got %v", err)
			}
			for _, p := range probs {
				if p.Line < 1 || p.Column < 1 || !placed.MatchString(p.String()) {
					t.Errorf("problem without a position: %+v (%s)", p, p)
				}
			}
		})
	}
	got := problemStrings(t, "# comments only\n")
	want := []string{
		`f.toml:1:1: clusters: the fleet has no clusters: add at least one [clusters.<name>] table`,
		`f.toml:1:1: promotion: stable is required: the release every cluster runs when no rollout has reached it`,
		`f.toml:1:1: releases: the fleet has no releases: add at least one [releases.<name>] table`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("comments-only file (-want +got):\n%s", diff)
	}
}
