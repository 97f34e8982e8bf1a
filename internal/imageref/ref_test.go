package imageref

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref  string
		want Ref
		err  string // part of the error; empty: parsed
	}{
		{ref: "registry.example.com/gpufleet/gpufleet-controller", want: Ref{Repository: "registry.example.com/gpufleet/gpufleet-controller"}},
		{ref: "registry.example.com/gpufleet/gpufleet-controller@sha256:" + hex,
			want: Ref{Repository: "registry.example.com/gpufleet/gpufleet-controller", Digest: "sha256:" + hex}},
		{ref: "registry.example.com:5000/gpufleet/gpufleet-controller:v0.9.0@sha256:" + hex,
			want: Ref{Repository: "registry.example.com:5000/gpufleet/gpufleet-controller", Tag: "v0.9.0", Digest: "sha256:" + hex}},
		// As written: no default registry or library/ path added.
		{ref: "gpufleet-controller:v0.9.0", want: Ref{Repository: "gpufleet-controller", Tag: "v0.9.0"}},
		{ref: "registry.example.com/gpufleet/gpufleet-controller@sha256:" + hex[:63], err: "invalid checksum digest length"},
		{ref: "registry.example.com/gpufleet/gpufleet-controller@sha256:" + strings.ToUpper(hex), err: "invalid checksum digest format"},
		{ref: "registry.example.com/gpufleet/gpufleet-controller@sha256", err: "invalid reference format"},
		{ref: "registry.example.com/gpufleet/GPUfleet-controller", err: "must be lowercase"},
		{ref: "registry.example.com/gpufleet/gpufleet-controller:", err: "invalid reference format"},
		{ref: "", err: "repository name must have at least one component"},
	} {
		got, err := Parse(tc.ref)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.ref, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %+v, %v; want an error saying %q", tc.ref, got, err, tc.err)
		case tc.err == "":
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.ref, diff)
			}
			if got.Pinned() != (tc.want.Digest != "") {
				t.Errorf("Parse(%q).Pinned() = %t", tc.ref, got.Pinned())
			}
		}
	}
}
