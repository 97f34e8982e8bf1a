package fleet

import (
	"strings"
	"testing"
)

// digest is a well-formed sha256 digest of no image in particular.
const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// withController is the minimal fleet with [controller] image = image and
// r1's and r2's controller versions v1 and v2.
func withController(t *testing.T, image, v1, v2 string) string {
	t.Helper()
	s := mustRead(t, "testdata/minimal.toml")
	s = strings.Replace(s, `driver = "570.172.08"`, `driver = "570.172.08"`+"\n"+`controller = "`+v1+`"`, 1)
	s = strings.Replace(s, `driver = "580.95.05"`, `driver = "580.95.05"`+"\n"+`controller = "`+v2+`"`, 1)
	return "[controller]\nimage = \"" + image + "\"\n\n" + s
}

// TestControllerImagePinned: a digest pins the controller's image, in
// [controller] image (one image for every release) or in a release's
// version (that release's build, which follows the waves); render writes
// the reference as it is.
func TestControllerImagePinned(t *testing.T) {
	const repo = "registry.internal.example/gpufleet/gpufleet-controller"
	for _, tc := range []struct {
		name, image, v1, v2 string
		want1, want2        string
	}{
		{"repository, versions", repo, "v0.9.0", "v0.10.0", repo + ":v0.9.0", repo + ":v0.10.0"},
		{"repository, each release's build pinned", repo, "v0.9.0@" + digest, "v0.10.0", repo + ":v0.9.0@" + digest, repo + ":v0.10.0"},
		{"one image pinned by digest", repo + "@" + digest, "v0.9.0", "v0.9.0", repo + "@" + digest, repo + "@" + digest},
		{"one image pinned by tag and digest", repo + ":v0.9.0@" + digest, "v0.9.0", "v0.9.0", repo + ":v0.9.0@" + digest, repo + ":v0.9.0@" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("f.toml", []byte(withController(t, tc.image, tc.v1, tc.v2)))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.ControllerImage(f.Releases["r1"]); got != tc.want1 {
				t.Errorf("r1's image %q, want %q", got, tc.want1)
			}
			if got := f.ControllerImage(f.Releases["r2"]); got != tc.want2 {
				t.Errorf("r2's image %q, want %q", got, tc.want2)
			}
			if got, want := f.Releases["r1"].ControllerVersion(), strings.Split(tc.v1, "@")[0]; got != want {
				t.Errorf("r1's controller version %q, want %q", got, want)
			}
		})
	}
}

// TestControllerImageRefused: a reference the distribution grammar does
// not read, a tag without a digest, and pins that contradict each other
// are refused at their file:line key.
func TestControllerImageRefused(t *testing.T) {
	const repo = "registry.internal.example/gpufleet/gpufleet-controller"
	for _, tc := range []struct {
		name, image, v1, v2 string
		want                []string
	}{
		{"a digest one hex digit short", repo + "@" + digest[:len(digest)-1], "v0.9.0", "v0.9.0", []string{
			`f.toml:2:1: controller.image: "` + repo + "@" + digest[:len(digest)-1] + `" is not an image reference: invalid checksum digest length: write the repository alone, e.g. registry.example.com/gpufleet/gpufleet-controller, or one image pinned by digest, …/gpufleet-controller@sha256:<64 hex digits>`,
		}},
		{"an algorithm without a digest", repo + "@sha256", "v0.9.0", "v0.9.0", []string{
			`f.toml:2:1: controller.image: "` + repo + `@sha256" is not an image reference: invalid reference format: write the repository alone, e.g. registry.example.com/gpufleet/gpufleet-controller, or one image pinned by digest, …/gpufleet-controller@sha256:<64 hex digits>`,
		}},
		{"upper case", "registry.internal.example/GPUfleet/gpufleet-controller", "v0.9.0", "v0.9.0", []string{
			`f.toml:2:1: controller.image: "registry.internal.example/GPUfleet/gpufleet-controller" is not an image reference: repository name must be lowercase: write the repository alone, e.g. registry.example.com/gpufleet/gpufleet-controller, or one image pinned by digest, …/gpufleet-controller@sha256:<64 hex digits>`,
		}},
		{"a tag alone", repo + ":v0.9.0", "v0.9.0", "v0.9.0", []string{
			`f.toml:2:1: controller.image: "` + repo + `:v0.9.0" names a tag without a digest: write the repository alone (each release's controller version is the tag, and may pin its build: controller = "v0.9.0@sha256:…"), or pin one image for every cluster by digest (` + repo + `@sha256:…)`,
		}},
		{"a release's digest malformed", repo, "v0.9.0@sha256:0123", "v0.10.0@" + digest, []string{
			`f.toml:8:1: releases.r1.controller: "` + repo + `:v0.9.0@sha256:0123" is not an image reference: invalid reference format`,
		}},
		{"a release's version that is none, with a digest", repo, "latest@" + digest, "v0.10.0", []string{
			`f.toml:8:1: releases.r1.controller: "latest@` + digest + `" is not a gpufleet-controller version such as v0.9.0 (the image's tag), optionally pinned to its build as v0.9.0@sha256:<64 hex digits>`,
		}},
		{"a pinned image and a release's version that is not its tag", repo + ":v0.9.0@" + digest, "v0.9.0", "v0.10.0", []string{
			`f.toml:14:1: releases.r2.controller: "v0.10.0" is not v0.9.0, the tag of the pinned [controller] image every cluster runs: name that version, or write the image as a repository and pin each release's build (controller = "v0.10.0@sha256:…")`,
		}},
		{"a pinned image and a release pinning a build too", repo + "@" + digest, "v0.9.0", "v0.9.0@" + digest, []string{
			`f.toml:14:1: releases.r2.controller: "v0.9.0@` + digest + `" pins a build, and [controller] image pins one for every release already (` + repo + "@" + digest + `): pin in one place`,
		}},
		{"a pinned image without a tag and two versions", repo + "@" + digest, "v0.9.0", "v0.10.0", []string{
			`f.toml:2:1: controller.image: pins one image for every cluster, and the releases name controller versions v0.10.0, v0.9.0: with a pinned image they all name its one version (or write the image as a repository and pin each release's build: controller = "v0.9.0@sha256:…", which follows the waves)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, withController(t, tc.image, tc.v1, tc.v2), tc.want)
		})
	}
}
