package fleet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// positionIndex maps key paths ("clusters.stg.pools[0].nodes",
// "waves[1].canary") to the line and column where each is written. The
// decoder tells where unknown keys and type errors are; this index lets
// semantic checks (a dangling reference, a duplicate) point at the key too.
type positionIndex struct {
	at map[string][2]int
	// text maps the key of a string value that holds a document of its
	// own (an operator's chart values, YAML) to where its text starts, so
	// that a problem inside it is placed at its line in the file.
	text map[string]textStart
}

// textStart is where the text of a string value starts: the line and
// column of its first character (after a multi-line string's opening
// delimiter and the line break that follows it).
type textStart struct{ line, col int }

// textKey says whether the string at key holds a document of its own.
func textKey(key string) bool { return strings.HasSuffix(key, ".values") }

// lookup returns the position of key, or of its nearest enclosing key that
// the file spells out; 0, 0 when nothing matches.
func (p positionIndex) lookup(key string) (line, col int) {
	for key != "" {
		if lc, ok := p.at[key]; ok {
			return lc[0], lc[1]
		}
		key = parentKey(key)
	}
	return 0, 0
}

// has reports whether the file spells out key itself (not merely a table
// above it): what tells `driver = ""` from a release without a driver.
func (p positionIndex) has(key string) bool {
	_, ok := p.at[key]
	return ok
}

// parentKey strips the last segment: "a.b[2]" → "a.b", "a.b" → "a".
func parentKey(key string) string {
	if strings.HasSuffix(key, "]") {
		if i := strings.LastIndexByte(key, '['); i >= 0 {
			return key[:i]
		}
	}
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i]
	}
	return ""
}

// joinKey appends a key segment, quoting it when it is not a bare key.
func joinKey(base, seg string) string {
	if !isBareKey(seg) {
		seg = fmt.Sprintf("%q", seg)
	}
	if base == "" {
		return seg
	}
	return base + "." + seg
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// indexPositions parses data and records where every key is. It returns the
// syntax error, if any, which the decoder will also report.
func indexPositions(data []byte) positionIndex {
	lines := lineStarts(data)
	// About three keys a line in a fleet file; sized once, as a file of
	// 5,000 clusters has 100,000 lines.
	idx := positionIndex{at: make(map[string][2]int, len(lines)*3/2)}
	// Keys come in the file's order, so the line of the last one is where
	// to look for the next.
	line := 0
	pos := func(off uint32) [2]int {
		o := int(off)
		if line >= len(lines) || lines[line] > o {
			line = 0
		}
		for line+1 < len(lines) && lines[line+1] <= o {
			line++
		}
		return [2]int{line + 1, o - lines[line] + 1}
	}
	var p unstable.Parser
	p.Reset(data)
	table := ""
	arrayCount := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, first := keyPath("", e.Key())
			if e.Kind == unstable.ArrayTable {
				n := arrayCount[path]
				arrayCount[path] = n + 1
				// Nested tables of earlier elements are renumbered by the
				// decoder the same way: by order of appearance.
				path = path + "[" + strconv.Itoa(n) + "]"
			}
			table = path
			if first != nil {
				idx.setOnce(path, pos(first.Raw.Offset))
			}
		case unstable.KeyValue:
			indexKeyValue(&idx, table, e, pos, data)
		}
	}
	return idx
}

func (p *positionIndex) setOnce(key string, lc [2]int) {
	if _, ok := p.at[key]; !ok {
		p.at[key] = lc
	}
}

func indexKeyValue(idx *positionIndex, base string, kv *unstable.Node, pos func(uint32) [2]int, data []byte) {
	path, first := keyPath(base, kv.Key())
	if first == nil {
		return
	}
	// Every prefix of a dotted key (a.b.c = 1) is a table the file spells.
	idx.setOnce(path, pos(first.Raw.Offset))
	if v := kv.Value(); v != nil && v.Kind == unstable.String && textKey(path) {
		lc := pos(v.Raw.Offset + stringTextOffset(data[v.Raw.Offset:v.Raw.Offset+v.Raw.Length]))
		if idx.text == nil {
			idx.text = map[string]textStart{}
		}
		idx.text[path] = textStart{lc[0], lc[1]}
	}
	indexValue(idx, path, kv.Value(), pos, data)
}

// stringTextOffset is where the text of a TOML string starts in its raw
// form: after the opening delimiter and, for a multi-line string, the line
// break right after it, which TOML drops.
func stringTextOffset(raw []byte) uint32 {
	if len(raw) >= 3 && (string(raw[:3]) == `"""` || string(raw[:3]) == "'''") {
		switch {
		case len(raw) > 3 && raw[3] == '\n':
			return 4
		case len(raw) > 4 && raw[3] == '\r' && raw[4] == '\n':
			return 5
		}
		return 3
	}
	return 1
}

func indexValue(idx *positionIndex, path string, v *unstable.Node, pos func(uint32) [2]int, data []byte) {
	if v == nil {
		return
	}
	switch v.Kind {
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			child := it.Node()
			key := path + "[" + strconv.Itoa(i) + "]"
			if child.Raw.Length > 0 || child.Raw.Offset > 0 {
				idx.setOnce(key, pos(child.Raw.Offset))
			}
			indexValue(idx, key, child, pos, data)
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			indexKeyValue(idx, path, it.Node(), pos, data)
		}
	}
}

// keyPath joins the parts of a (possibly dotted) key onto base and returns
// the first key node, whose position stands for the whole key.
func keyPath(base string, it unstable.Iterator) (string, *unstable.Node) {
	var first *unstable.Node
	path := base
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		path = joinKey(path, string(n.Data))
	}
	return path, first
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}
