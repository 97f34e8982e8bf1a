package lint

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	kusttypes "sigs.k8s.io/kustomize/api/types"
)

// sopsValue marks a value SOPS encrypted.
const sopsValue = "ENC["

const plaintextFix = "encrypt it with SOPS (`gpufleet secret encrypt`), and delete the plaintext from Git history"

// plaintextSecret reports a Secret with data that SOPS did not encrypt: a
// Secret without SOPS metadata, or each value SOPS left in plaintext in one
// with it (a key added after encryption, or an encrypted_regex that misses
// it).
func plaintextSecret(d *doc) []Finding {
	if d.kind != "Secret" || d.apiVersion != "v1" || argoRepositoryWithoutCredentials(d) {
		return nil
	}
	return secretData(d, "Secret "+d.name)
}

// secretData reports what of the data and stringData of d, a Secret (or a
// patch of one), is in plaintext; what names it in messages.
func secretData(d *doc, what string) []Finding {
	encrypted := lookup(d.node, "sops") != nil
	var out []Finding
	for _, key := range []string{"data", "stringData"} {
		v := lookup(d.node, key)
		if v == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
			continue
		}
		if !encrypted {
			return []Finding{{
				File: d.file, Line: d.line(key), Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("%s holds %s in plaintext", what, key),
				Fix:     plaintextFix,
			}}
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], resolve(v.Content[i+1])
			if val != nil && val.Kind == yaml.ScalarNode && val.Value != "" && !strings.HasPrefix(val.Value, sopsValue) {
				out = append(out, Finding{
					File: d.file, Line: k.Line + d.shift, Severity: Error, Rule: "plaintext-secret",
					Message: fmt.Sprintf("%s is SOPS-encrypted but %s.%s is in plaintext", what, key, k.Value),
					Fix:     "re-encrypt the file (`sops --encrypt --in-place`, or `gpufleet secret encrypt` again), and delete the plaintext from Git history",
				})
			}
		}
	}
	return out
}

// argoRepositoryKeys are the keys of an Argo CD repository Secret that
// hold no credential: where the repository is and how to reach it.
var argoRepositoryKeys = map[string]bool{
	"url": true, "type": true, "name": true, "project": true, "insecure": true, "enableLfs": true,
	"enableOCI": true, "proxy": true, "noProxy": true, "forceHttpBasicAuth": true, "depth": true,
}

// argoRepositoryWithoutCredentials says d is an Argo CD repository Secret
// (label argocd.argoproj.io/secret-type: repository, as render writes for a
// cluster on Argo CD) that names the repository and nothing secret: Argo CD
// declares a repository only as a Secret, and its credentials are the keys
// this does not list (password, sshPrivateKey, …), which stay out of Git.
func argoRepositoryWithoutCredentials(d *doc) bool {
	if scalar(d.node, "metadata", "labels", "argocd.argoproj.io/secret-type") != "repository" {
		return false
	}
	for _, key := range []string{"data", "stringData"} {
		v := lookup(d.node, key)
		if v == nil || v.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			if !argoRepositoryKeys[v.Content[i].Value] {
				return false
			}
		}
	}
	return true
}

// kustomizationSecrets reports what the kustomization kd (file kf) has
// kustomize build into a Secret in plaintext: a secretGenerator's
// literals, and its env and data files that SOPS did not encrypt
// (kustomize-controller decrypts SOPS-encrypted ones; a listed file that
// is missing is reported too); a patch, inline or in a file, strategic
// merge or JSON 6902, that writes a Secret's data. Every kustomization
// file of the repository is read, built by a Flux Kustomization or not: a
// plaintext Secret in Git is one whoever builds it. The entries are read
// with kustomize's own types; one kustomize would not read is an error.
func (r *repo) kustomizationSecrets(kf string, kd *doc) []Finding {
	dir := path.Dir(kf)
	var out []Finding
	unreadable := func(n *yaml.Node, what string, err error) {
		out = append(out, Finding{File: kf, Line: n.Line, Severity: Error, Rule: "kustomization",
			Message: fmt.Sprintf("%s is not what kustomize reads: %v", what, err), Fix: "fix the entry: kustomize build fails on it"})
	}
	for _, g := range items(lookup(kd.node, "secretGenerator")) {
		var args kusttypes.SecretArgs
		if err := g.Decode(&args); err != nil {
			unreadable(g, "secretGenerator entry", err)
			continue
		}
		out = append(out, r.generatorSecrets(kf, dir, g, args)...)
	}
	for _, key := range []string{"patches", "patchesJson6902"} {
		for _, pn := range items(lookup(kd.node, key)) {
			var p kusttypes.Patch
			if err := pn.Decode(&p); err != nil {
				unreadable(pn, key+" entry", err)
				continue
			}
			if p.Patch != "" {
				_, text := entry(pn, "patch")
				out = append(out, patchSecrets(kf, text.Value, inlineShift(text), p.Target, false)...)
			}
			if p.Path != "" {
				out = append(out, r.patchFileSecrets(path.Clean(path.Join(dir, p.Path)), p.Target)...)
			}
		}
	}
	for _, pn := range items(lookup(kd.node, "patchesStrategicMerge")) {
		var p kusttypes.PatchStrategicMerge
		if err := pn.Decode(&p); err != nil {
			unreadable(pn, "patchesStrategicMerge entry", err)
			continue
		}
		// kustomize's own test (FixKustomizationPreMarshalling): a path
		// when such a file exists, else the patch itself.
		if file := path.Clean(path.Join(dir, string(p))); !strings.Contains(string(p), "\n") && r.exists(file) {
			out = append(out, r.patchFileSecrets(file, nil)...)
			continue
		}
		out = append(out, patchSecrets(kf, string(p), inlineShift(pn), nil, false)...)
	}
	return out
}

// fluxPatchSecrets reports the plaintext Secret data the inline patches of
// a Flux Kustomization (spec.patches, which kustomize-controller applies
// with kustomize) write, read as kustomize reads them.
func fluxPatchSecrets(d *doc) []Finding {
	var out []Finding
	for _, pn := range items(lookup(d.node, "spec", "patches")) {
		var p kusttypes.Patch
		if err := pn.Decode(&p); err != nil || p.Patch == "" {
			continue // the API server refuses it: not a Secret in Git
		}
		_, text := entry(pn, "patch")
		out = append(out, patchSecrets(d.file, text.Value, inlineShift(text)+d.shift, p.Target, false)...)
	}
	return out
}

// generatorSecrets reports the plaintext a secretGenerator entry g (node
// n of file kf, in dir) puts into its Secret.
func (r *repo) generatorSecrets(kf, dir string, n *yaml.Node, g kusttypes.SecretArgs) []Finding {
	// kustomize folds the older env: into envs:.
	k := kusttypes.Kustomization{SecretGenerator: []kusttypes.SecretArgs{g}}
	k.FixKustomization()
	g = k.SecretGenerator[0]
	var out []Finding
	if len(g.LiteralSources) > 0 {
		out = append(out, Finding{File: kf, Line: keyLine(n, "literals"), Severity: Error, Rule: "plaintext-secret",
			Message: fmt.Sprintf("secretGenerator %s holds %d literal(s) in plaintext", g.Name, len(g.LiteralSources)),
			Fix:     "move the values to a SOPS-encrypted Secret (`gpufleet secret encrypt`) or an encrypted env file, and delete the plaintext from Git history"})
	}
	for _, src := range append(slices.Clone(g.EnvSources), g.FileSources...) {
		line := sourceLine(n, src)
		file := src
		if _, after, ok := strings.Cut(src, "="); ok && slices.Contains(g.FileSources, src) {
			file = after // files: [key=path]
		}
		b, err := r.read(path.Clean(path.Join(dir, file)))
		switch {
		case err != nil:
			out = append(out, Finding{File: kf, Line: line, Severity: Error, Rule: "missing-resource",
				Message: fmt.Sprintf("secretGenerator %s file %s is listed but missing", g.Name, src), Fix: "add the file (SOPS-encrypted) or remove the entry"})
		case !strings.Contains(string(b), sopsValue):
			out = append(out, Finding{File: kf, Line: line, Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("secretGenerator %s reads %s, which is not SOPS-encrypted", g.Name, src),
				Fix:     "encrypt the file with SOPS (kustomize-controller decrypts it), and delete the plaintext from Git history"})
		}
	}
	return out
}

// sourceLine is the line of the env or file source src in the generator
// node n.
func sourceLine(n *yaml.Node, src string) int {
	for _, key := range []string{"envs", "files"} {
		for _, item := range items(lookup(n, key)) {
			if item.Kind == yaml.ScalarNode && item.Value == src {
				return item.Line
			}
		}
	}
	return keyLine(n, "env")
}

// inlineShift places the lines of a patch held in the string node n in the
// file: a block scalar's text starts on the line below its key.
func inlineShift(n *yaml.Node) int {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Line
	}
	return n.Line - 1
}

// patchFileSecrets reports the plaintext a patch file (slash path p)
// writes into a Secret: the strategic-merge documents of it lint loaded
// are checked with every other document, so this reads the file again
// for what they miss (a JSON 6902 list of operations, a patch that names
// no kind and has a Secret as target).
func (r *repo) patchFileSecrets(p string, target *kusttypes.Selector) []Finding {
	b, err := r.read(p)
	if err != nil {
		return nil // reported as a missing patch by build
	}
	return patchSecrets(p, string(b), 0, target, true)
}

// patchSecrets reports the plaintext Secret data a patch's text (in file,
// its lines shifted by shift) writes, as kustomize reads a patch: a list
// of operations is a JSON 6902 patch of target; anything else holds
// strategic-merge patches (YAML documents, a List's items). loaded says
// the text is a file lint loaded: its v1 Secrets are checked already, as
// documents.
func patchSecrets(file, text string, shift int, target *kusttypes.Selector, loaded bool) []Finding {
	targetKind, targetName := "", ""
	if target != nil {
		targetKind, targetName = target.Kind, target.Name
	}
	var out []Finding
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			break // kustomize fails on it: not lint's to say here
		}
		if len(n.Content) == 0 {
			continue
		}
		if ops := resolve(n.Content[0]); ops.Kind == yaml.SequenceNode {
			if targetKind == "Secret" {
				out = append(out, jsonPatchSecrets(file, ops, shift, targetName)...)
			}
			continue
		}
		for _, d := range objects(file, n.Content[0], shift) {
			secret := d.kind == "Secret" || (d.kind == "" && targetKind == "Secret")
			switch {
			case !secret || (d.apiVersion != "" && d.apiVersion != "v1"):
			case loaded && d.kind == "Secret" && d.apiVersion == "v1":
			default:
				out = append(out, secretData(d, "the patch of Secret "+cmp.Or(d.name, targetName))...)
			}
		}
	}
	return out
}

// jsonPatchSecrets reports the operations of a JSON 6902 patch of Secret
// name that add or replace its data or stringData with plaintext.
func jsonPatchSecrets(file string, ops *yaml.Node, shift int, name string) []Finding {
	var out []Finding
	for _, op := range items(ops) {
		p := scalar(op, "path")
		switch scalar(op, "op") {
		case "add", "replace":
		default:
			continue
		}
		field, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if field != "data" && field != "stringData" {
			continue
		}
		if plaintextValue(lookup(op, "value")) {
			out = append(out, Finding{File: file, Line: keyLine(op, "value") + shift, Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("the JSON patch of Secret %s writes %s in plaintext", name, p), Fix: plaintextFix})
		}
	}
	return out
}

// plaintextValue says whether a value written into a Secret's data holds
// plaintext: a scalar SOPS did not encrypt, or a mapping with one.
func plaintextValue(v *yaml.Node) bool {
	v = resolve(v)
	switch {
	case v == nil:
		return false
	case v.Kind == yaml.ScalarNode:
		return v.Value != "" && !strings.HasPrefix(v.Value, sopsValue)
	case v.Kind == yaml.MappingNode:
		for i := 1; i < len(v.Content); i += 2 {
			if plaintextValue(v.Content[i]) {
				return true
			}
		}
	}
	return false
}
