package lint

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// kustomizationFiles are the names kustomize reads a folder's
// kustomization from, in its order of preference.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomizationOf is the kustomization file of dir and its document; "",
// nil when the folder has none (Flux then applies every manifest below it).
func (r *repo) kustomizationOf(dir string) (string, *doc) {
	for _, name := range kustomizationFiles {
		f := path.Join(dir, name)
		if ds := r.files[f]; len(ds) > 0 {
			return f, ds[0]
		}
	}
	return "", nil
}

// exists tells whether the slash path p (relative to the root) is in the
// repository: any file, not only the manifests lint parses (a
// kustomization may list an env file, a folder). A path that leaves the
// repository is not in it: kustomize refuses to read it.
func (r *repo) exists(p string) bool {
	_, err := r.fs.Stat(filepath.FromSlash(p))
	return err == nil
}

func (r *repo) isDir(p string) bool {
	st, err := r.fs.Stat(filepath.FromSlash(p))
	return err == nil && st.IsDir()
}

// build walks what kustomize builds from dir: resources and components,
// recursively. It returns the YAML files applied (for their workloads) and
// the findings of every kustomization file on the way: a resource, patch
// or component that is listed but missing. (What they generate or patch
// into Secrets is checked for every kustomization file: see
// kustomizationSecrets.)
func (r *repo) build(dir string) ([]string, []Finding) {
	var applied []string
	var findings []Finding
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		kf, kd := r.kustomizationOf(dir)
		if kd == nil {
			for file := range r.files {
				if strings.HasPrefix(file, dir+"/") || dir == "." {
					applied = append(applied, file)
				}
			}
			return
		}
		missing := func(item *yaml.Node, what, fix string) {
			findings = append(findings, Finding{File: kf, Line: item.Line, Severity: Error, Rule: "missing-resource", Message: fmt.Sprintf("%s %s is listed but missing", what, item.Value), Fix: fix})
		}
		refer := func(item *yaml.Node, what string) {
			p := path.Clean(path.Join(dir, item.Value))
			switch {
			case r.files[p] != nil:
				applied = append(applied, p)
			case r.isDir(p):
				walk(p)
			case r.exists(p), isRemote(item.Value):
			default:
				if f, ok := missingSecret(p, kf, item.Line); ok {
					findings = append(findings, f)
					return
				}
				fix := "add the file (an encrypted Secret: `gpufleet secret encrypt`) or remove the entry"
				if what == "component" {
					fix = "add the component's folder or remove the entry"
				}
				missing(item, what, fix)
			}
		}
		for _, item := range items(lookup(kd.node, "resources")) {
			refer(item, "resource")
		}
		for _, item := range items(lookup(kd.node, "components")) {
			refer(item, "component")
		}
		for _, p := range patchFiles(kd.node) {
			if !r.exists(path.Join(dir, p.Value)) {
				missing(p, "patch", "add the patch file or remove the entry")
			}
		}
	}
	walk(dir)
	return applied, findings
}

// patchFiles are the nodes naming patch files in a kustomization: patches
// with a path, patchesStrategicMerge entries that are not inline, and
// patchesJson6902 paths.
func patchFiles(k *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for _, key := range []string{"patches", "patchesJson6902"} {
		for _, p := range items(lookup(k, key)) {
			if v := lookup(p, "path"); v != nil && v.Kind == yaml.ScalarNode {
				out = append(out, v)
			}
		}
	}
	for _, p := range items(lookup(k, "patchesStrategicMerge")) {
		if p.Kind == yaml.ScalarNode && !strings.Contains(p.Value, "\n") {
			out = append(out, p)
		}
	}
	return out
}

// hostLike matches a first path segment that is a host name
// (github.com, gitlab.example.org), not a file name (app.yaml).
var hostLike = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(:[0-9]+)?$`)

// isRemote tells a remote resource from a local path, as kustomize does:
// a URL with a scheme, an scp-like git address, or a scheme-less one whose
// first segment is a host (github.com/org/repo//path?ref=v1).
func isRemote(res string) bool {
	if strings.Contains(res, "://") || strings.HasPrefix(res, "git@") {
		return true
	}
	first, rest, ok := strings.Cut(res, "/")
	if !ok || rest == "" {
		return false
	}
	switch path.Ext(first) {
	case ".yaml", ".yml", ".json":
		return false
	}
	return hostLike.MatchString(first)
}
