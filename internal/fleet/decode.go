package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Decoding a fleet file takes two passes, each linear in the file's size:
//
//  1. go-toml's parser (the parser alone) walks the file in its order and
//     checks its syntax, that every key is one of the schema's and that
//     every value has the schema's type. Its messages carry the line, the
//     column and the key with array indices (clusters.a.pools[1].nodes).
//  2. BurntSushi/toml decodes the checked file into rawFile. It also finds
//     what a parser alone cannot: a key or table defined twice.
//
// go-toml's decoder is not used: it tracks the keys it has seen in a list
// it scans at each key and builds an error's context from the whole file
// for each unknown key, so 100,000 keys in one table took minutes.

// MaxFileSize is the largest fleet file gpufleet reads: far above any
// fleet (5,000 clusters with 4 pools each is about 2 MB), low enough that a
// hostile file cannot hold a command for long.
const MaxFileSize = 16 << 20

// decodeProblem is what the first pass found at one place of the file.
type decodeProblem struct {
	line, col int
	key, msg  string
}

// checkFile is the first pass. It returns the unknown keys (every one of
// them: the known keys decode), or the error that stops decoding (a syntax
// error, a value of the wrong type).
func checkFile(data []byte) (unknown []decodeProblem, stop *decodeProblem) {
	c := newSchemaCheck(data)
	if stop := c.run(); stop != nil {
		return nil, stop
	}
	return c.unknown, nil
}

// decodeChecked is the second pass, on a file checkFile and checkShapes
// passed; it returns the key defined twice, if one is.
func decodeChecked(data []byte, raw *rawFile) *decodeProblem {
	if _, err := toml.Decode(string(data), raw); err != nil {
		return decoderProblem(data, err)
	}
	return nil
}

// schemaCheck is the first pass (see above).
type schemaCheck struct {
	data    []byte
	lines   []int
	unknown []decodeProblem
	// reported are the unknown keys already named: keys below them are not.
	reported map[string]bool
	// arrays counts the elements of each [[array table]] so far, to name
	// them as the position index does.
	arrays map[string]int
}

func newSchemaCheck(data []byte) *schemaCheck {
	return &schemaCheck{data: data, lines: lineStarts(data), reported: map[string]bool{}, arrays: map[string]int{}}
}

// run walks the file; it returns the problem that stops decoding, if any.
func (c *schemaCheck) run() *decodeProblem {
	var p unstable.Parser
	p.Reset(c.data)
	// The table the key-values below a header go into, its key and type
	// (nil below an unknown table, whose keys are not reported again).
	tableKey, tableType := "", fileSchema
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			segs, first := keySegments(e.Key())
			if first == nil {
				continue
			}
			t, key, stop := c.walk(fileSchema, "", segs, first)
			if stop != nil {
				return stop
			}
			if e.Kind == unstable.ArrayTable && t != nil {
				n := c.arrays[key]
				c.arrays[key] = n + 1
				key += "[" + strconv.Itoa(n) + "]"
			}
			if t != nil && !isTable(t) && !isList(t) && !isAny(t) {
				return c.wrongType(first, key, "table", t)
			}
			tableKey, tableType = key, t
		case unstable.KeyValue:
			if tableType == nil {
				continue
			}
			if stop := c.keyValue(tableType, tableKey, e); stop != nil {
				return stop
			}
		}
	}
	if err := p.Error(); err != nil {
		return c.syntaxProblem(err)
	}
	return nil
}

// keyValue checks one key = value in the table of type t at key base.
func (c *schemaCheck) keyValue(t reflect.Type, base string, kv *unstable.Node) *decodeProblem {
	segs, first := keySegments(kv.Key())
	if first == nil {
		return nil
	}
	t, key, stop := c.walk(t, base, segs, first)
	if stop != nil || t == nil {
		return stop
	}
	return c.value(t, key, kv.Value())
}

// walk follows segs from the type t at base. It returns the type at the
// end, and its key; a nil type when the path leaves the schema (reported
// as an unknown key) or enters a free-form value.
func (c *schemaCheck) walk(t reflect.Type, base string, segs []string, at *unstable.Node) (reflect.Type, string, *decodeProblem) {
	key := base
	for _, seg := range segs {
		if isAny(t) {
			return nil, key, nil
		}
		next := stepType(t, seg)
		key = joinKey(key, seg)
		if next == nil {
			if isTable(t) || isList(t) {
				c.unknownKey(at, key)
				return nil, key, nil
			}
			// A dotted key into a value that is no table.
			return nil, key, c.wrongType(at, parentKey(key), "table", t)
		}
		t = next
	}
	return t, key, nil
}

// value checks that the value v at key fits the type t.
func (c *schemaCheck) value(t reflect.Type, key string, v *unstable.Node) *decodeProblem {
	if v == nil || isAny(t) {
		return nil
	}
	t = indirect(t)
	switch v.Kind {
	case unstable.String:
		if t.Kind() == reflect.String {
			return nil
		}
	case unstable.Integer:
		if isInt(t.Kind()) || t.Kind() == reflect.Float64 {
			return nil
		}
	case unstable.Float:
		if t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32 {
			return nil
		}
	case unstable.Bool:
		if t.Kind() == reflect.Bool {
			return nil
		}
	case unstable.DateTime, unstable.LocalDateTime, unstable.LocalDate, unstable.LocalTime:
		if t == reflect.TypeFor[time.Time]() {
			return nil
		}
	case unstable.Array:
		if t.Kind() != reflect.Slice {
			break
		}
		it := v.Children()
		for i := 0; it.Next(); i++ {
			if stop := c.value(t.Elem(), key+"["+strconv.Itoa(i)+"]", it.Node()); stop != nil {
				return stop
			}
		}
		return nil
	case unstable.InlineTable:
		if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
			break
		}
		it := v.Children()
		for it.Next() {
			if stop := c.keyValue(t, key, it.Node()); stop != nil {
				return stop
			}
		}
		return nil
	}
	return c.wrongType(v, key, tomlKind(v.Kind), t)
}

func (c *schemaCheck) unknownKey(at *unstable.Node, key string) {
	if c.reported[key] {
		return
	}
	c.reported[key] = true
	line, col := c.position(at)
	c.unknown = append(c.unknown, decodeProblem{line: line, col: col, key: key, msg: "unknown key"})
}

func (c *schemaCheck) wrongType(at *unstable.Node, key, got string, want reflect.Type) *decodeProblem {
	line, col := c.position(at)
	msg := fmt.Sprintf("wrong type: got %s %s, want %s", article(got), got, typeWord(want))
	if textKey(key) && want.Kind() == reflect.String {
		// A table where the chart values' YAML goes.
		msg += ": write the release's chart values as the YAML of a Helm values file, values = '''...'''"
	}
	return &decodeProblem{line: line, col: col, key: key, msg: msg}
}

// position is where a node of the file is; a node the parser made up (an
// array's implicit parts) counts as the file's start.
func (c *schemaCheck) position(n *unstable.Node) (line, col int) {
	if n == nil {
		return 1, 1
	}
	return offsetPosition(c.lines, n.Raw.Offset)
}

// syntaxProblem places go-toml's syntax error: its highlight is a part of
// the file, so where that part starts is where the error is.
func (c *schemaCheck) syntaxProblem(err error) *decodeProblem {
	var pe *unstable.ParserError
	if !errors.As(err, &pe) {
		return &decodeProblem{line: 1, col: 1, msg: err.Error()}
	}
	off := 0
	if pe.Highlight != nil {
		off = cap(c.data) - cap(pe.Highlight)
	}
	if off < 0 || off > len(c.data) {
		off = 0
	}
	line, col := offsetPosition(c.lines, uint32(off))
	key := ""
	if len(pe.Key) > 0 {
		key = keyString(pe.Key)
	}
	return &decodeProblem{line: line, col: col, key: key, msg: pe.Message}
}

// decoderProblem places an error of the second pass: after the first, it
// can only be a key or table defined twice, which BurntSushi/toml reports
// as a ParseError with its line; the column is where that line's text
// starts (the decoder's column points past the key).
func decoderProblem(data []byte, err error) *decodeProblem {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &decodeProblem{line: 1, col: 1, msg: err.Error()}
	}
	line, col := max(pe.Position.Line, 1), 1
	if starts := lineStarts(data); line <= len(starts) {
		text := data[starts[line-1]:]
		col += len(text) - len(bytes.TrimLeft(text, " \t"))
	}
	return &decodeProblem{line: line, col: col, key: pe.LastKey, msg: strings.TrimSuffix(pe.Message, ".")}
}

// tomlKind names a value's TOML type in a message.
func tomlKind(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "string"
	case unstable.Integer:
		return "integer"
	case unstable.Float:
		return "float"
	case unstable.Bool:
		return "boolean"
	case unstable.Array:
		return "array"
	case unstable.InlineTable:
		return "inline table"
	case unstable.LocalDate:
		return "local date"
	case unstable.LocalTime:
		return "local time"
	}
	return "date-time"
}

// typeWord names a Go type of the schema in a message.
func typeWord(t reflect.Type) string {
	t = indirect(t)
	switch {
	case isInt(t.Kind()):
		return "an integer"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice && indirect(t.Elem()).Kind() == reflect.String:
		return "an array of strings"
	case t.Kind() == reflect.Slice && isTable(t.Elem()):
		return "a list of tables"
	case t.Kind() == reflect.Slice:
		return "an array"
	case t == reflect.TypeFor[time.Time]():
		return "a date-time"
	case isTable(t):
		return "a table"
	}
	return t.String()
}

// article is "an" before a vowel ("an inline table"), else "a".
func article(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'e' || word[0] == 'i' || word[0] == 'o' || word[0] == 'u') {
		return "an"
	}
	return "a"
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

// isAny says whether t takes any value (a freeze's date-times, which the
// validation reads by their TOML type).
func isAny(t reflect.Type) bool {
	return t != nil && t.Kind() == reflect.Interface
}
