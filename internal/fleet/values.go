package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// An adopted operator's own chart values.
//
// A team that installed the GPU Operator (or the Network Operator) with
// Helm gave it values of its own: a mirror for the driver image
// (driver.repository), the container toolkit off, DCGM exporter settings,
// tolerations. helm-controller upgrades a release with the HelmRelease's
// values alone, and the manifests mode renders the chart with what render
// hands it alone: without the release's own values, the first apply would
// drop every one of them and change what runs. So the fleet file carries
// them, as the YAML of a Helm values file in a multi-line literal string:
//
//	[clusters.prod-a.gpu-operator]
//	release = "gpu-operator-1712345678"
//	values = '''
//	driver:
//	  repository: registry.example.com/nvidia
//	toolkit:
//	  enabled: false
//	'''
//
// and render merges gpufleet's own values over them (see
// render.MergeValues). The keys gpufleet writes are its own and are refused
// here, each with where the fleet file says it instead.

// OwnedValue is a chart value gpufleet writes itself: a cluster's values
// may not set it, or anything under it.
type OwnedValue struct {
	// Path is the value's dotted path in the chart's values, e.g.
	// "driver.version".
	Path string
	// Instead says where the fleet file decides it; "<name>" stands for the
	// cluster's name.
	Instead string
}

// GPUOperatorOwnedValues are the GPU Operator chart values render writes
// (render's gpuOperatorValues and upgradePolicy, whose tests hold them to
// this list both ways): the parser refuses them in a cluster's values, and
// gpufleet init drops them from the values it reads from a release.
var GPUOperatorOwnedValues = []OwnedValue{
	{"driver.enabled", "gpufleet manages drivers the GPU Operator installs, so the operator's driver is always on"},
	{"driver.nvidiaDriverCRD", "driver-management in [clusters.<name>.gpu-operator] decides it (NVIDIADriver objects or the ClusterPolicy's DaemonSet)"},
	{"driver.version", "the driver is the release's: [releases.<release>] driver"},
	{"driver.usePrecompiled", "precompiled drivers are the release's: [releases.<release>] precompiled"},
	{"driver.upgradePolicy", "the operator's upgrade policy follows the rollout policy: [policy] (actuator, parallel-nodes, max-unavailable, drain-timeout) and its overrides"},
	{"mig.strategy", "render sets it from the pools: mixed when a pool of the cluster has a mig layout"},
}

// NetworkOperatorOwnedValues are the Network Operator chart values render
// writes (render.NetworkOperatorValues).
var NetworkOperatorOwnedValues = []OwnedValue{
	{"nfd.enabled", "gpufleet runs the GPU Operator's Node Feature Discovery and turns the Network Operator's off (two would fight over the same node labels)"},
}

// GPUOperatorValues are the cluster's own GPU Operator chart values (its
// [clusters.<name>.gpu-operator] values), nil when it has none. They are
// the fleet's: copy before changing them.
func (c *Cluster) GPUOperatorValues() map[string]any {
	if c.GPUOperator == nil {
		return nil
	}
	return c.GPUOperator.Values
}

// NetworkOperatorValues are the cluster's own Network Operator chart
// values, nil when it has none.
func (c *Cluster) NetworkOperatorValues() map[string]any {
	if c.NetworkOperator == nil {
		return nil
	}
	return c.NetworkOperator.Values
}

// validateValues parses the values of one operator table (at key, e.g.
// clusters.prod.gpu-operator) into in.Values, reporting every problem at
// its line in the file: a YAML error, a document that is not a mapping, a
// key written twice, a key gpufleet owns.
func (f *Fleet) validateValues(probs *problemList, c *Cluster, key string, in *OperatorInstall, owned []OwnedValue) {
	valuesKey := key + ".values"
	if _, written := f.positions.at[valuesKey]; !written {
		return
	}
	at := f.positions.text[valuesKey]
	// lineCol places a line and column of the YAML in the file: the text
	// of a literal string is the file's bytes, line for line.
	lineCol := func(line, col int) (int, int) {
		if at.line == 0 {
			l, c := f.positions.lookup(valuesKey)
			return l, c
		}
		if line <= 1 {
			return at.line, at.col + max(col, 1) - 1
		}
		return at.line + line - 1, max(col, 1)
	}
	addAt := func(line, col int, k, format string, args ...any) {
		l, c := lineCol(line, col)
		probs.addAt(l, c, k, fmt.Sprintf(format, args...))
	}
	src := []byte(in.ValuesYAML)
	if len(bytes.TrimSpace(stripYAMLComments(src))) == 0 {
		probs.add(valuesKey, "values must not be empty: leave it out for the chart's defaults")
		return
	}
	var doc yamlv3.Node
	dec := yamlv3.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		addAt(yamlErrorLine(src, err), 1, valuesKey, "not YAML: %s (the release's chart values, as a Helm values file has them)", yamlMessage(err))
		return
	}
	var next yamlv3.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		line := next.Line
		if err != nil {
			line = yamlErrorLine(src, err)
		}
		addAt(line, 1, valuesKey, "values holds more than one YAML document: write one mapping of chart values")
		return
	}
	root := &doc
	if root.Kind == yamlv3.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yamlv3.DocumentNode || root.Kind == yamlv3.ScalarNode && root.Tag == "!!null" {
		// "---" or "null" alone: Helm reads no values either.
		probs.add(valuesKey, "values must not be empty: leave it out for the chart's defaults")
		return
	}
	if root.Kind != yamlv3.MappingNode {
		addAt(root.Line, root.Column, valuesKey, "the chart values must be a YAML mapping (key: value lines, as in a Helm values file), not %s", yamlKindWord(root))
		return
	}
	bad := false
	duplicateKeys(root, func(dup, first *yamlv3.Node, path []string) {
		bad = true
		firstLine, _ := lineCol(first.Line, first.Column)
		addAt(dup.Line, dup.Column, joinKeys(valuesKey, path), "written twice (first at line %d): Helm would keep the last; write it once", firstLine)
	})
	if bad {
		return
	}
	// Helm reads a values file with sigs.k8s.io/yaml (YAML to JSON), and
	// so does this: the values are what Helm would see.
	var values map[string]any
	if err := yaml.Unmarshal(src, &values); err != nil {
		addAt(1, 1, valuesKey, "not YAML as Helm reads it: %v", err)
		return
	}
	for _, o := range owned {
		path := strings.Split(o.Path, ".")
		var v any = values
		for i, seg := range path {
			m, isMap := v.(map[string]any)
			if !isMap {
				node := yamlPath(root, path[:i])
				addAt(node.Line, node.Column, joinKeys(valuesKey, path[:i]), "must be a mapping: gpufleet writes %s under it (%s)", o.Path, instead(o, c))
				break
			}
			next, ok := m[seg]
			if !ok {
				break
			}
			if i == len(path)-1 {
				node := yamlPath(root, path)
				addAt(node.Line, node.Column, joinKeys(valuesKey, path), "%s is gpufleet's to set: %s; leave it out of values", o.Path, instead(o, c))
				break
			}
			v = next
		}
	}
	in.Values = values
}

// instead is o.Instead for cluster c.
func instead(o OwnedValue, c *Cluster) string {
	return strings.ReplaceAll(o.Instead, "<name>", c.Name)
}

// indexMark marks a list index ("[2]") among the keys of a path.
const indexMark = "\x00"

// joinKeys appends YAML keys (and list indices) to a fleet file key.
func joinKeys(base string, path []string) string {
	for _, p := range path {
		if idx, ok := strings.CutPrefix(p, indexMark); ok {
			base += idx
			continue
		}
		base = joinKey(base, p)
	}
	return base
}

// yamlLinePrefix is how a yaml.v3 error names a line ("yaml: line 3: ").
var yamlLinePrefix = regexp.MustCompile(`^yaml: line \d+: `)

// yamlMessage is a yaml.v3 error without its line.
func yamlMessage(err error) string {
	msg := err.Error()
	if m := yamlLinePrefix.FindString(msg); m != "" {
		return msg[len(m):]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// yamlErrorLine is the line of src where err, what yaml.v3 found wrong
// with src, is: the last line of the shortest run of src's first lines
// that fails the same way. The line yaml.v3's message names is not it: it
// is the start of what was being read (a flow list, a block), counted from
// 0 for a parser error and from 1 for a scanner error. Values are a few
// hundred lines at most, and this runs only on an error.
func yamlErrorLine(src []byte, err error) int {
	const most = 2000
	lines := bytes.SplitAfter(src, []byte("\n"))
	for n := 1; n <= len(lines) && n <= most; n++ {
		var doc yamlv3.Node
		dec := yamlv3.NewDecoder(bytes.NewReader(bytes.Join(lines[:n], nil)))
		e := dec.Decode(&doc)
		if e == nil {
			var next yamlv3.Node
			e = dec.Decode(&next)
		}
		if e != nil && e.Error() == err.Error() {
			return n
		}
	}
	return 0
}

func yamlKindWord(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.SequenceNode:
		return "a list"
	case yamlv3.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	case yamlv3.AliasNode:
		return "an alias"
	}
	return "this"
}

// duplicateKeys calls dup for every key of a mapping under n written a
// second time, with its first writing and its path. Merge keys (<<) are
// YAML's own and may repeat.
func duplicateKeys(n *yamlv3.Node, dup func(second, first *yamlv3.Node, path []string)) {
	var walk func(n *yamlv3.Node, path []string)
	walk = func(n *yamlv3.Node, path []string) {
		switch n.Kind {
		case yamlv3.MappingNode:
			seen := map[string]*yamlv3.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := append(slices.Clip(path), k.Value)
				if k.Value != "<<" {
					if first, ok := seen[k.Value]; ok {
						dup(k, first, p)
					} else {
						seen[k.Value] = k
					}
				}
				walk(v, p)
			}
		case yamlv3.SequenceNode:
			for i, v := range n.Content {
				walk(v, append(slices.Clip(path), indexMark+"["+strconv.Itoa(i)+"]"))
			}
		}
	}
	walk(n, nil)
}

// yamlPath finds the key node at path under the mapping root, or the
// nearest one above it the text spells (root itself at worst).
func yamlPath(root *yamlv3.Node, path []string) *yamlv3.Node {
	at, n := root, root
	for _, seg := range path {
		if n.Kind != yamlv3.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				at, n, found = n.Content[i], n.Content[i+1], true
			}
		}
		if !found {
			break
		}
	}
	return at
}

// stripYAMLComments blanks the comment lines of src, to tell a values
// string of comments alone (empty) from one with values.
func stripYAMLComments(src []byte) []byte {
	var out []byte
	for line := range bytes.SplitSeq(src, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
