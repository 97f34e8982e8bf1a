package imageref

// Tag is image reference ref's tag: "25.04-0.6.1.0-2-ubuntu22.04-amd64" for
// "nvcr.io/nvidia/mellanox/doca-driver:25.04-0.6.1.0-2-ubuntu22.04-amd64",
// also when a digest follows it. It is "" where ref names no tag (a digest
// alone, or the repository alone: a runtime then pulls "latest", which
// names no version) and where ref is not an image reference at all.
func Tag(ref string) string {
	r, err := Parse(ref)
	if err != nil {
		return ""
	}
	return r.Tag
}
