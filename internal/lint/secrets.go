package lint

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
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
	encrypted := lookup(d.node, "sops") != nil
	var out []Finding
	for _, key := range []string{"data", "stringData"} {
		v := lookup(d.node, key)
		if v == nil || v.Kind != yaml.MappingNode || len(v.Content) == 0 {
			continue
		}
		if !encrypted {
			return []Finding{{
				File: d.file, Line: keyLine(d.node, key), Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("Secret %s holds %s in plaintext", d.name, key),
				Fix:     plaintextFix,
			}}
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], resolve(v.Content[i+1])
			if val != nil && val.Kind == yaml.ScalarNode && val.Value != "" && !strings.HasPrefix(val.Value, sopsValue) {
				out = append(out, Finding{
					File: d.file, Line: k.Line, Severity: Error, Rule: "plaintext-secret",
					Message: fmt.Sprintf("Secret %s is SOPS-encrypted but %s.%s is in plaintext", d.name, key, k.Value),
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

// secretGenerators reports the secretGenerator entries of the
// kustomization kd (file kf, in dir) that put plaintext in Git: literals,
// and env or data files that SOPS did not encrypt (kustomize-controller
// decrypts SOPS-encrypted ones). A listed file that is missing is reported
// too.
func (r *repo) secretGenerators(dir, kf string, kd *doc) []Finding {
	var out []Finding
	for _, g := range items(lookup(kd.node, "secretGenerator")) {
		name := scalar(g, "name")
		if lits := items(lookup(g, "literals")); len(lits) > 0 {
			out = append(out, Finding{File: kf, Line: keyLine(g, "literals"), Severity: Error, Rule: "plaintext-secret",
				Message: fmt.Sprintf("secretGenerator %s holds %d literal(s) in plaintext", name, len(lits)),
				Fix:     "move the values to a SOPS-encrypted Secret (`gpufleet secret encrypt`) or an encrypted env file, and delete the plaintext from Git history"})
		}
		for _, key := range []string{"envs", "files"} {
			for _, item := range items(lookup(g, key)) {
				if item.Kind != yaml.ScalarNode {
					continue
				}
				src := item.Value
				if _, after, ok := strings.Cut(src, "="); ok && key == "files" {
					src = after // files: [key=path]
				}
				p := path.Clean(path.Join(dir, src))
				b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(p)))
				switch {
				case err != nil:
					out = append(out, Finding{File: kf, Line: item.Line, Severity: Error, Rule: "missing-resource",
						Message: fmt.Sprintf("secretGenerator %s file %s is listed but missing", name, item.Value), Fix: "add the file (SOPS-encrypted) or remove the entry"})
				case !strings.Contains(string(b), sopsValue):
					out = append(out, Finding{File: kf, Line: item.Line, Severity: Error, Rule: "plaintext-secret",
						Message: fmt.Sprintf("secretGenerator %s reads %s, which is not SOPS-encrypted", name, item.Value),
						Fix:     "encrypt the file with SOPS (kustomize-controller decrypts it), and delete the plaintext from Git history"})
				}
			}
		}
	}
	return out
}
