package fleet

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// rawFile is the fleet file as decoded, before validation.
type rawFile struct {
	Charts     Charts              `toml:"charts"`
	Controller Controller          `toml:"controller"`
	GitOps     rawGitOps           `toml:"gitops"`
	Releases   map[string]*Release `toml:"releases"`
	Clusters   map[string]*Cluster `toml:"clusters"`
	Waves      []*Wave             `toml:"waves"`
	Policy     rawPolicy           `toml:"policy"`
	Promotion  Promotion           `toml:"promotion"`
	Stack      *Stack              `toml:"stack"`
}

// Load reads and validates the fleet file at path. Invalid input returns
// Problems listing everything wrong with it.
func Load(path string) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet file: %w", err)
	}
	return Parse(path, data)
}

// Parse validates data as a fleet file; name is used in messages.
func Parse(name string, data []byte) (*Fleet, error) {
	probs := &problemList{file: name, pos: indexPositions(data)}

	var raw rawFile
	unknown, err := decodeFile(data, &raw)
	// Every unknown key is reported; the known ones decoded fine, so
	// validation goes on and reports the rest too.
	for _, k := range unknown {
		probs.addAt(k.line, k.col, probs.pos.keyFor(k.line, k.key), "unknown key")
	}
	if err != nil {
		var decErr *toml.DecodeError
		if errors.As(err, &decErr) {
			// A syntax or type error stops decoding: nothing after it can
			// be trusted.
			line, col := decErr.Position()
			key, msg := probs.pos.keyFor(line, decErr.Key()), cleanDecodeMessage(decErr.Error())
			if strings.Contains(decErr.Error(), "OperatorInstall.ValuesYAML ") {
				// A table where the chart values' YAML goes.
				key += ".values"
				msg += ": write the release's chart values as the YAML of a Helm values file, values = '''...'''"
			}
			probs.addAt(line, col, key, msg)
		} else {
			probs.addAt(1, 1, "", err.Error())
		}
		return nil, probs.list.sorted()
	}
	// A table in the wrong shape decoded into something the file does not
	// say (a list of one pool with none of its keys): checking what was
	// decoded would only add noise, so the shape problems stand alone.
	if checkShapes(data, probs) {
		return nil, probs.list.sorted()
	}

	f := &Fleet{
		Path:       name,
		Source:     data,
		positions:  probs.pos,
		Charts:     raw.Charts,
		Controller: raw.Controller,
		Releases:   orEmpty(raw.Releases),
		Clusters:   orEmpty(raw.Clusters),
		Waves:      raw.Waves,
		Promotion:  raw.Promotion,
		Stack:      raw.Stack,
		policy:     raw.Policy,
		gitops:     raw.GitOps,
	}
	f.clusterNames = sortedKeys(f.Clusters)
	f.validate(probs)
	if len(probs.list) > 0 {
		return nil, probs.list.sorted()
	}
	return f, nil
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// keyFor names a key the decoder reported on line the way the position
// index does, with array indices.
func (p positionIndex) keyFor(line int, k toml.Key) string {
	if len(k) > 0 {
		if key, ok := p.keyOnLine(line, joinKey("", k[len(k)-1])); ok {
			return key
		}
	}
	path := ""
	for _, part := range k {
		path = joinKey(path, part)
	}
	return path
}

// cleanDecodeMessage turns go-toml's wording into ours.
func cleanDecodeMessage(msg string) string {
	msg = strings.TrimPrefix(msg, "toml: ")
	// "cannot decode TOML string into struct field fleet.Pool.Nodes of type int"
	if i := strings.Index(msg, " into struct field "); i >= 0 && strings.HasPrefix(msg, "cannot decode TOML ") {
		got := strings.TrimPrefix(msg[:i], "cannot decode TOML ")
		want := msg[strings.LastIndex(msg, " of type ")+len(" of type "):]
		return fmt.Sprintf("wrong type: got %s %s, want %s", article(got), got, typeWord(want))
	}
	return msg
}

// article is "an" before a vowel ("an inline table"), else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func typeWord(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "int", "int64":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "[]string":
		return "an array of strings"
	}
	if strings.HasPrefix(goType, "[]") {
		return "an array"
	}
	if strings.HasPrefix(goType, "map[") || strings.Contains(goType, ".") {
		return "a table"
	}
	return goType
}

// ReleaseNames returns the release names, sorted.
func (f *Fleet) ReleaseNames() []string { return sortedKeys(f.Releases) }

// ClusterNames returns the cluster names, sorted. Parse sorts them once:
// commands over a large fleet ask for them per cluster and per service.
func (f *Fleet) ClusterNames() []string {
	if len(f.clusterNames) == len(f.Clusters) && f.clusterNames != nil {
		return slices.Clone(f.clusterNames)
	}
	return sortedKeys(f.Clusters)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Position returns where key is written in the fleet file (see Problem.Key
// for the key syntax); 0, 0 when it is not.
func (f *Fleet) Position(key string) (line, col int) { return f.positions.lookup(key) }
