package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// doc is one YAML document of the repository.
type doc struct {
	file string // slash path relative to the repository root
	node *yaml.Node
	// apiVersion, kind, name, namespace of a Kubernetes object; empty otherwise.
	apiVersion, kind, name, namespace string
}

// repo is every YAML document of a repository, by file.
type repo struct {
	root  string
	docs  []*doc
	files map[string][]*doc
}

// load reads every .yaml/.yml file under root, skipping .git.
func load(root string) (*repo, []Finding, error) {
	r := &repo{root: root, files: map[string][]*doc{}}
	var findings []Finding
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				findings = append(findings, Finding{File: rel, Line: 1, Severity: Error, Rule: "yaml", Message: fmt.Sprintf("not valid YAML: %v", err), Fix: "fix the syntax"})
				break
			}
			if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
				continue
			}
			d := &doc{file: rel, node: n.Content[0]}
			d.apiVersion = scalar(d.node, "apiVersion")
			d.kind = scalar(d.node, "kind")
			d.name = scalar(d.node, "metadata", "name")
			d.namespace = scalar(d.node, "metadata", "namespace")
			r.docs = append(r.docs, d)
			r.files[rel] = append(r.files[rel], d)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read repository %s: %w", root, err)
	}
	return r, findings, nil
}

// lookup follows a path of mapping keys from n; nil when absent.
func lookup(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// keyLine is the line of the key at path, or of the closest parent present.
func keyLine(n *yaml.Node, path ...string) int {
	line := n.Line
	cur := n
	for _, key := range path {
		if cur == nil || cur.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == key {
				line = cur.Content[i].Line
				cur = cur.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}

func scalar(n *yaml.Node, path ...string) string {
	if v := lookup(n, path...); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// isFluxKustomization tells Flux Kustomizations from kustomize's own files.
func (d *doc) isFluxKustomization() bool {
	return d.kind == "Kustomization" && strings.HasPrefix(d.apiVersion, "kustomize.toolkit.fluxcd.io/")
}
