package imageref

import (
	"fmt"

	"github.com/distribution/reference"
)

// Ref is an image reference taken apart: "registry.example.com/team/app"
// as Repository, "v1" as Tag and "sha256:…" as Digest, each of the last two
// empty where the reference names none.
type Ref struct {
	Repository string
	Tag        string
	Digest     string
}

// Pinned reports whether the reference names its image by digest: a tag
// can be pushed again to name other content, a digest cannot.
func (r Ref) Pinned() bool { return r.Digest != "" }

// Parse reads ref as written: no default registry or "library/" path is
// added, so what a fleet file says is what a container runtime pulls. A
// digest must be well formed for its algorithm (sha256: 64 lower-case hex
// digits).
func Parse(ref string) (Ref, error) {
	r, err := reference.Parse(ref)
	if err != nil {
		return Ref{}, fmt.Errorf("%q is not an image reference: %w", ref, err)
	}
	var out Ref
	if n, ok := r.(reference.Named); ok {
		out.Repository = n.Name()
	}
	if t, ok := r.(reference.Tagged); ok {
		out.Tag = t.Tag()
	}
	if d, ok := r.(reference.Digested); ok {
		out.Digest = d.Digest().String()
	}
	if out.Repository == "" {
		// The grammar allows a digest alone; an image to pull needs a
		// repository.
		return Ref{}, fmt.Errorf("%q names no repository", ref)
	}
	return out, nil
}
