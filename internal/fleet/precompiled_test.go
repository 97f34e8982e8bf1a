package fleet

import (
	"strings"
	"testing"
)

// TestPrecompiledDriver covers how a release asks for the GPU Operator's
// precompiled drivers: precompiled = true with a driver branch. A branch
// alone is refused with a message that says how to ask for them, and a full
// version with precompiled is refused with the branch to write instead.
func TestPrecompiledDriver(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	const r2 = `driver = "580.95.05"`
	t.Run("branch with precompiled is accepted", func(t *testing.T) {
		f, err := Parse("f.toml", []byte(strings.Replace(base, r2, "driver = \"580\"\nprecompiled = true", 1)))
		if err != nil {
			t.Fatalf("a precompiled release must parse:\n%v", err)
		}
		r := f.Releases["r2"]
		if !r.Precompiled || r.Driver != "580" {
			t.Errorf("got precompiled=%t driver=%q, want true and \"580\"", r.Precompiled, r.Driver)
		}
		if !IsDriverBranch(r.Driver) || IsDriverBranch(f.Releases["r1"].Driver) {
			t.Errorf("IsDriverBranch: 580 must be a branch, %s must not", f.Releases["r1"].Driver)
		}
	})
	tests := []struct {
		name, edit string
		want       []string
	}{
		{
			name: "branch without precompiled says how to ask for it",
			edit: `driver = "580"`,
			want: []string{`f.toml:9:1: releases.r2.driver: "580" is a driver branch, not a version: write the full version (e.g. 580.95.05), or, for the GPU Operator's precompiled drivers of branch 580, add precompiled = true to [releases.r2]`},
		},
		{
			name: "full version with precompiled names the branch",
			edit: "driver = \"580.95.05\"\nprecompiled = true",
			want: []string{`f.toml:9:1: releases.r2.driver: "580.95.05" is a driver version, but precompiled drivers are chosen by branch: write driver = "580", or drop precompiled = true to build 580.95.05 on each node`},
		},
		{
			name: "precompiled with something else",
			edit: "driver = \"latest\"\nprecompiled = true",
			want: []string{`f.toml:9:1: releases.r2.driver: "latest" is not a driver branch such as "570" (precompiled = true)`},
		},
		{
			name: "precompiled must be a boolean",
			edit: "driver = \"580\"\nprecompiled = \"yes\"",
			want: []string{`f.toml:10:15: releases.r2.precompiled: wrong type: got a string, want true or false`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantProblems(t, strings.Replace(base, r2, tt.edit, 1), tt.want)
		})
	}
}
