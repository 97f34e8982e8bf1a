package fleet

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2/unstable"
)

// checkShapes reports every key the file writes in the wrong TOML shape for
// the fleet file's schema: a list of tables written as one table
// ([clusters.a.pools] instead of [[clusters.a.pools]]), implied by a longer
// header ([clusters.a.pools.gpu]) or by a dotted key (pools.name = ...), and
// one table written as a list ([[clusters.a]]).
//
// The decoder alone is not enough: it stores a lone [clusters.a.pools]
// table as a list of one pool and says nothing, so the file would be read
// differently from how it is written, and the next [clusters.a.pools] (a
// second pool, as its author meant) becomes a syntax error far from the cause.
//
// It reports whether it found any.
func checkShapes(data []byte, probs *problemList) bool {
	lines := lineStarts(data)
	var p unstable.Parser
	p.Reset(data)
	// lists are the array-of-tables paths the file has opened with [[...]]:
	// a longer header below one of them goes into its last element.
	lists := map[string]bool{}
	reported := map[string]bool{}
	report := func(path []string, at *unstable.Node, format string, args ...any) {
		key := keyString(path)
		if reported[key] {
			return
		}
		reported[key] = true
		line, col := 1, 1
		if at != nil {
			line, col = offsetPosition(lines, at.Raw.Offset)
		}
		probs.addAt(line, col, key, fmt.Sprintf(format, args...))
	}
	// impliedTables checks the tables that what (a header or a dotted key)
	// creates on the way to the last segment of path.
	impliedTables := func(path []string, at *unstable.Node, what string) {
		for i := 1; i < len(path); i++ {
			prefix := path[:i]
			if isList(typeAt(prefix)) && !lists[keyString(prefix)] {
				report(prefix, at, "%s is a list of tables, but %s makes it one table: open each entry with [[%s]]", lastSeg(prefix), what, keyString(prefix))
			}
		}
	}
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, first := keySegments(e.Key())
			if len(path) == 0 {
				continue
			}
			table = path
			impliedTables(path, first, "["+keyString(path)+"]")
			t := typeAt(path)
			switch {
			case t == nil:
				// An unknown key: the decoder reports it.
			case e.Kind == unstable.Table && isList(t) && !lists[keyString(path)]:
				report(path, first, "%s is a list of tables: write [[%s]] (double brackets) for each entry, not [%s]", lastSeg(path), keyString(path), keyString(path))
			case e.Kind == unstable.ArrayTable && isTable(t):
				report(path, first, "%s is one table: write [%s], not [[%s]]", lastSeg(path), keyString(path), keyString(path))
			case e.Kind == unstable.ArrayTable:
				lists[keyString(path)] = true
			}
		case unstable.KeyValue:
			rel, first := keySegments(e.Key())
			if len(rel) < 2 {
				continue
			}
			path := append(append([]string(nil), table...), rel...)
			impliedTables(path, first, "the dotted key "+keyString(rel))
		}
	}
	return len(reported) > 0
}

// offsetPosition turns a byte offset into a 1-based line and column.
func offsetPosition(lineStarts []int, off uint32) (line, col int) {
	i := sort.Search(len(lineStarts), func(i int) bool { return lineStarts[i] > int(off) }) - 1
	return i + 1, int(off) - lineStarts[i] + 1
}

func keySegments(it unstable.Iterator) ([]string, *unstable.Node) {
	var segs []string
	var first *unstable.Node
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		segs = append(segs, string(n.Data))
	}
	return segs, first
}

func keyString(path []string) string {
	key := ""
	for _, seg := range path {
		key = joinKey(key, seg)
	}
	return key
}

func lastSeg(path []string) string { return keyString(path[len(path)-1:]) }

// fileSchema is the Go type the fleet file decodes into; its toml tags are
// the schema checkShapes holds the file to.
var fileSchema = reflect.TypeFor[rawFile]()

// typeAt returns the type the decoder stores the value at path in (an
// element's type when the path goes through a list of tables); nil when the
// path leaves the schema (an unknown key) or enters a free-form value.
func typeAt(path []string) reflect.Type {
	t := fileSchema
	for _, seg := range path {
		if t = stepType(t, seg); t == nil {
			return nil
		}
	}
	return t
}

// stepType is typeAt one segment further down from t; nil when seg leaves
// the schema.
func stepType(t reflect.Type, seg string) reflect.Type {
	t = indirect(t)
	if t.Kind() == reflect.Slice {
		t = indirect(t.Elem())
	}
	switch t.Kind() {
	case reflect.Struct:
		f, ok := fieldByTag(t, seg)
		if !ok {
			return nil
		}
		return f
	case reflect.Map:
		return t.Elem()
	}
	return nil
}

// fieldTypes memoizes fieldByTag: typeAt runs for every table and key of
// the file, and looking through a struct's tags each time was a fifth of
// the time of loading a large fleet.
var fieldTypes sync.Map // fieldKey → fieldType

type fieldKey struct {
	t   reflect.Type
	key string
}

type fieldType struct {
	t  reflect.Type
	ok bool
}

// fieldByTag finds the field the decoder fills for key, looking into
// embedded structs as the decoder does.
func fieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	k := fieldKey{t, key}
	if ft, ok := fieldTypes.Load(k); ok {
		return ft.(fieldType).t, ft.(fieldType).ok
	}
	ft, ok := lookupFieldByTag(t, key)
	if ok {
		// Only the schema's own keys, so a file full of unknown keys
		// cannot grow the cache.
		fieldTypes.Store(k, fieldType{ft, ok})
	}
	return ft, ok
}

func lookupFieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && name == "" {
			if ft, ok := fieldByTag(indirect(f.Type), key); ok {
				return ft, true
			}
			continue
		}
		if name == key && name != "-" { // "-": a field the file never sets
			return f.Type, true
		}
	}
	return nil, false
}

func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// isTable reports whether t holds one table (a struct or a map).
func isTable(t reflect.Type) bool {
	if t == nil {
		return false
	}
	k := indirect(t).Kind()
	return k == reflect.Struct || k == reflect.Map
}

// isList reports whether t holds a list of tables (not a list of strings:
// those are written as arrays and the decoder checks them).
func isList(t reflect.Type) bool {
	if t == nil {
		return false
	}
	t = indirect(t)
	if t.Kind() != reflect.Slice {
		return false
	}
	return isTable(t.Elem())
}
