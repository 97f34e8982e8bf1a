package imageref

import "testing"

func TestTag(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for ref, want := range map[string]string{
		"nvcr.io/nvidia/mellanox/doca-driver:doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64":          "doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64",
		"nvcr.io/nvidia/mellanox/doca-driver:doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64" + digest: "doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64",
		"nvcr.io/nvidia/driver:580.95.05-ubuntu22.04":                                              "580.95.05-ubuntu22.04",
		"nvcr.io/nvidia/gpu-operator:v25.10.0":                                                     "v25.10.0",
		"gpu-operator:v25.10.0":                                                                    "v25.10.0",
		// A registry's port is no tag.
		"registry.local:5000/nvidia/gpu-operator":          "",
		"registry.local:5000/nvidia/gpu-operator:v25.10.0": "v25.10.0",
		"nvcr.io/nvidia/gpu-operator" + digest:             "",
		"nvcr.io/nvidia/gpu-operator":                      "",
		"":                                                 "",
		"not a reference:v1":                               "",
	} {
		if got := Tag(ref); got != want {
			t.Errorf("Tag(%q) = %q, want %q", ref, got, want)
		}
	}
}
