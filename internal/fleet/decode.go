package fleet

import (
	"bytes"
	"errors"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Decoding in linear time.
//
// go-toml's decoder costs time in proportion to everything decoded so far
// at each [[array table]] header: its duplicate-key tracker scans all the
// keys it has seen (internal/tracker: find, clear) and it resets its array
// counters by walking all of them (resetChildArrayCounts). A fleet file has
// one [[clusters.<name>.pools]] header per pool, so decoding grows with the
// square of the cluster count (5,000 clusters × 4 pools: 1.5 s).
//
// No option turns that off, and the go-toml versions without it (before
// v2.4) read a lone [clusters.x.pools] differently and word their errors
// differently. So the file is decoded in independent parts with go-toml
// itself, each part everything the file says under one entry of a map of
// the schema (one cluster, one release, one service, one policy override)
// or under one other top-level table. TOML's rules about defining a key
// twice only relate keys with a common table, and parts share none, so each
// part decoded alone is checked exactly as in the whole file; the parts
// are decoded into the same rawFile, and go-toml adds to maps and structs
// it finds filled. Where the file does anything that would let two parts
// meet (a key at the top level, a table or dotted key that writes a map's
// entries from above it), the parts merge, down to the whole file.
//
// Any error other than unknown keys is reported from a decode of the whole
// file, so messages and positions are the decoder's own, and the first
// error in the file's order is the one reported.

// unknownKey is a key the schema does not have, with where it is written.
type unknownKey struct {
	line, col int
	key       toml.Key
}

// decodeFile decodes data into raw with go-toml's strict decoder. It returns
// the unknown keys, or the decoder's error when it stopped (a syntax or type
// error, a key defined twice).
func decodeFile(data []byte, raw *rawFile) ([]unknownKey, error) {
	parts, ok := splitParts(data)
	if !ok {
		return decodeWhole(data, raw)
	}
	var unknown []unknownKey
	for _, p := range parts {
		var keys []unknownKey
		var err error
		if p.entry != nil {
			keys, err = decodeEntry(p, raw)
		} else {
			keys, err = decodeWhole(p.text, raw)
		}
		if err != nil {
			// Report it as the whole file does (see above).
			*raw = rawFile{}
			return decodeWhole(data, raw)
		}
		for _, k := range keys {
			k.line = p.fileLine(k.line)
			unknown = append(unknown, k)
		}
	}
	return unknown, nil
}

// decodeWhole decodes data in one go.
func decodeWhole(data []byte, raw *rawFile) ([]unknownKey, error) {
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(raw)
	var strict *toml.StrictMissingError
	if !errors.As(err, &strict) {
		return nil, err
	}
	keys := make([]unknownKey, len(strict.Errors))
	for i := range strict.Errors {
		e := &strict.Errors[i]
		line, col := e.Position()
		keys[i] = unknownKey{line: line, col: col, key: e.Key()}
	}
	return keys, nil
}

// part is the text of some tables of the file, in the file's order, and
// where each run of its lines starts in the file.
type part struct {
	text []byte
	// runs[i] says that the part's line runs[i][0] (1-based) is the file's
	// line runs[i][1]; runs are in order.
	runs  [][2]int
	lines int // how many lines text has
	// entry is set when the part is everything under one map entry, whose
	// name the text spells with a stand-in of the same length (see
	// decodeEntry).
	entry *entryPart
}

// entryPart is the map entry a part holds.
type entryPart struct {
	mapPath []string // the map's path in the schema, e.g. [clusters]
	name    string   // the entry's name, e.g. prod-00001
	standIn string   // the name the part's text gives it
	raw     string   // how the file spells the name, e.g. "a" or a
	off     []int    // where the name is in the text, in each header of the part
}

// fileLine turns a line of the part into the file's line.
func (p *part) fileLine(line int) int {
	i := sort.Search(len(p.runs), func(i int) bool { return p.runs[i][0] > line }) - 1
	if i < 0 {
		return line
	}
	return p.runs[i][1] + line - p.runs[i][0]
}

// splitParts cuts data into independent parts (see above); false when the
// file must be decoded whole: a syntax error, or a key at its top level.
func splitParts(data []byte) ([]*part, bool) {
	lines := lineStarts(data)
	type section struct {
		start int // byte offset of the header's line
		line  int // 1-based line of the header
		group string
		// entryAt, entryLen, entryRaw: where and how the header spells
		// the map entry its group is named by (entryLen 0 when none).
		entryAt, entryLen   int
		entryRaw, entryName string
		path                []string
	}
	var sections []section
	groups := unionFind{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var tableType reflect.Type // typeAt(table)
	var own string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, first := keySegments(e.Key())
			if len(path) == 0 || first == nil {
				return nil, false
			}
			table = path
			tableType = typeAt(path)
			line, _ := offsetPosition(lines, first.Raw.Offset)
			own = groupOf(path)
			groups.add(own)
			if t := tableType; t != nil && indirect(t).Kind() == reflect.Map {
				// [clusters] or [stack.age-recipients]: the map itself.
				groups.touch(mapKey(path), own)
			}
			sec := section{start: lines[line-1], line: line, group: own, path: path}
			if n := entryLength(path); n > 0 {
				it := e.Key()
				for i := 0; it.Next(); i++ {
					if i == n-1 {
						k := it.Node()
						sec.entryAt, sec.entryLen = int(k.Raw.Offset), int(k.Raw.Length)
						sec.entryRaw, sec.entryName = string(data[sec.entryAt:sec.entryAt+sec.entryLen]), string(k.Data)
					}
				}
			}
			sections = append(sections, sec)
		case unstable.KeyValue:
			if table == nil {
				return nil, false // a key at the top level may reach anywhere
			}
			rel, _ := keySegments(e.Key())
			touchMaps(&groups, own, table, tableType, rel)
		}
	}
	if p.Error() != nil || len(sections) < 2 {
		return nil, false
	}
	groups.joinEntriesOfTouchedMaps()

	// A group whose only member is one map entry can be decoded under a
	// stand-in name (see decodeEntry).
	members := map[string]int{}
	for k := range groups.parent {
		members[groups.find(k)]++
	}
	byGroup := map[string]*part{}
	var parts []*part
	for i, s := range sections {
		end := len(data)
		if i+1 < len(sections) {
			end = sections[i+1].start
		}
		g := groups.find(s.group)
		pt := byGroup[g]
		if pt == nil {
			pt = &part{}
			byGroup[g] = pt
			parts = append(parts, pt)
		}
		pt.runs = append(pt.runs, [2]int{pt.lines + 1, s.line})
		if len(pt.runs) == 1 && g == s.group && members[g] == 1 && s.entryLen > 0 {
			n := entryLength(s.path)
			pt.entry = &entryPart{mapPath: s.path[:n-1], name: s.entryName, raw: s.entryRaw, standIn: standIn(s.entryRaw)}
		}
		if en := pt.entry; en != nil {
			if s.entryLen == 0 || s.entryRaw != en.raw {
				pt.entry = nil // spelled two ways: decode as written
			} else {
				en.off = append(en.off, len(pt.text)+s.entryAt-s.start)
			}
		}
		pt.text = append(pt.text, data[s.start:end]...)
		if len(pt.text) > 0 && pt.text[len(pt.text)-1] != '\n' {
			pt.text = append(pt.text, '\n')
		}
		// Sections start at the start of a line, so the file's lines
		// between two headers are the part's.
		pt.lines += sectionLines(lines, s.start, end)
	}
	return parts, true
}

// sectionLines counts the lines of data[start:end], where start is the
// start of a line: the last one counts even without its line break.
func sectionLines(lineStarts []int, start, end int) int {
	first := sort.SearchInts(lineStarts, start)
	last := sort.SearchInts(lineStarts, end) // the first line at or after end
	return last - first
}

// groupOf names the part a table header belongs to: the shortest prefix
// of path that is an entry of a map of the schema (clusters.<name>,
// stack.services.<name>...), else its top-level table.
func groupOf(path []string) string {
	if n := entryLength(path); n > 0 {
		return keyString(path[:n])
	}
	return mapKey(path[:1])
}

// entryLength is the length of the shortest prefix of path that ends in an
// entry of a map of the schema; 0 when there is none.
func entryLength(path []string) int {
	for i := 1; i < len(path); i++ {
		if t := typeAt(path[:i]); t != nil && indirect(t).Kind() == reflect.Map {
			return i + 1
		}
	}
	return 0
}

// touchMaps records that a key rel of the table at table (of type
// tableType) writes maps of the schema below table as a whole
// (environments = {...}) or reaches into their entries
// (environments.prod.soak = "2h"): those maps' entries must then be
// decoded with own, the table's part.
func touchMaps(g *unionFind, own string, table []string, tableType reflect.Type, rel []string) {
	t := tableType
	for i, seg := range rel {
		if t == nil {
			return
		}
		if t = stepType(t, seg); t == nil {
			return
		}
		if indirect(t).Kind() == reflect.Map {
			path := append(append([]string(nil), table...), rel[:i+1]...)
			g.touch(mapKey(path), own)
		}
	}
}

// mapKey names a map of the schema in the union-find; entries are named by
// keyString, which never starts with a NUL byte.
func mapKey(path []string) string { return "\x00" + keyString(path) }

// unionFind joins the groups of tables that must be decoded together.
type unionFind struct {
	parent map[string]string
	// touched are the maps written from above their entries.
	touched map[string]bool
}

func (u *unionFind) add(k string) {
	if u.parent == nil {
		u.parent = map[string]string{}
	}
	if _, ok := u.parent[k]; !ok {
		u.parent[k] = k
	}
}

func (u *unionFind) find(k string) string {
	u.add(k)
	for u.parent[k] != k {
		u.parent[k] = u.parent[u.parent[k]]
		k = u.parent[k]
	}
	return k
}

func (u *unionFind) union(a, b string) {
	ra, rb := u.find(a), u.find(b)
	if ra != rb {
		u.parent[rb] = ra
	}
}

// touch joins own with the map m and remembers that m was written as a
// whole, so that its entries join too (joinEntriesOfTouchedMaps).
func (u *unionFind) touch(m, own string) {
	if u.touched == nil {
		u.touched = map[string]bool{}
	}
	u.touched[m] = true
	u.union(own, m)
}

// joinEntriesOfTouchedMaps joins every entry group with the map above it
// when that map was written as a whole.
func (u *unionFind) joinEntriesOfTouchedMaps() {
	if len(u.touched) == 0 {
		return
	}
	keys := make([]string, 0, len(u.parent))
	for k := range u.parent {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if k == "" || k[0] == 0 {
			continue
		}
		// Every map above the entry k: its entry is itself inside maps'
		// entries (stack.services.<s>.environments.<env>) only through k.
		for m := range u.touched {
			if mapContains(m[1:], k) {
				u.union(m, k)
			}
		}
	}
}

// mapContains reports whether the entry key lies directly in the map m
// (both as keyString writes them).
func mapContains(m, entry string) bool {
	if len(entry) <= len(m)+1 || entry[:len(m)] != m || entry[len(m)] != '.' {
		return false
	}
	return !containsSegmentBreak(entry[len(m)+1:])
}

// containsSegmentBreak reports whether a key written by keyString has more
// than one segment.
func containsSegmentBreak(k string) bool {
	quoted := false
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			return true
		}
	}
	return false
}

// decodeEntry decodes a part that holds one map entry under a stand-in
// name of the same length as the file's spelling (so every column stays
// where it is), into a fresh file, and moves the entry into raw under its
// own name. The stand-in is the same for every entry of a map whose names
// are spelled as long: go-toml's decoder keeps a counter per array-table
// path across documents and walks all of them at each [[header]], so
// 5,000 cluster names would bring back the cost this avoids.
func decodeEntry(p *part, raw *rawFile) ([]unknownKey, error) {
	en := p.entry
	text := p.text
	for _, off := range en.off {
		copy(text[off:], en.standIn)
	}
	var sub rawFile
	keys, err := decodeWhole(text, &sub)
	// The text is the part's own copy: put the name back for messages.
	for _, off := range en.off {
		copy(text[off:], en.raw)
	}
	if err != nil {
		return nil, err
	}
	for i := range keys {
		if k := keys[i].key; len(k) > len(en.mapPath) && k[len(en.mapPath)] == standInName(en.standIn) {
			k = append(toml.Key(nil), k...)
			k[len(en.mapPath)] = en.name
			keys[i].key = k
		}
	}
	from, to := mapAt(reflect.ValueOf(&sub).Elem(), en.mapPath), mapAt(reflect.ValueOf(raw).Elem(), en.mapPath)
	if v := from.MapIndex(reflect.ValueOf(standInName(en.standIn))); v.IsValid() {
		if to.IsNil() {
			to.Set(reflect.MakeMap(to.Type()))
		}
		to.SetMapIndex(reflect.ValueOf(en.name), v)
	}
	return keys, nil
}

// standIn spells a stand-in key as long as raw, quoted as raw is.
func standIn(raw string) string {
	if len(raw) >= 2 && (raw[0] == '"' || raw[0] == '\'') {
		return raw[:1] + strings.Repeat("x", len(raw)-2) + raw[len(raw)-1:]
	}
	return strings.Repeat("x", len(raw))
}

// standInName is the key a stand-in spells.
func standInName(s string) string { return strings.Trim(s, `"'`) }

// mapAt returns the map field at path under v (structs, through
// pointers, which it allocates as the decoder would).
func mapAt(v reflect.Value, path []string) reflect.Value {
	for _, seg := range path {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = fieldValueByTag(v, seg)
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v
}

// fieldValueByTag is fieldByTag for a value: the field the decoder fills
// for key, through embedded structs.
func fieldValueByTag(v reflect.Value, key string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && name == "" {
			if fv := fieldValueByTag(v.Field(i), key); fv.IsValid() {
				return fv
			}
			continue
		}
		if name == key {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}
