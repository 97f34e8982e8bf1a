package render

import (
	"strconv"
)

// decodeObject decodes JSON that encoding/json wrote (json.Marshal of an
// object) into what json.Unmarshal gives for it into a map[string]any:
// maps, []any, strings, float64, bool and nil. It is render's one JSON
// decode of every object it writes, and json.Unmarshal's reflection was
// the larger half of encoding an object. False for anything it does not
// read plainly (a string with an escape, input that is not one object):
// the caller then uses json.Unmarshal. TestDecodeObjectIsUnmarshal and
// FuzzDecodeObject hold it to json.Unmarshal.
func decodeObject(j []byte) (map[string]any, bool) {
	d := jsonDecoder{b: j}
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value()
	if !ok {
		return nil, false
	}
	d.space()
	if d.i != len(d.b) {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

type jsonDecoder struct {
	b []byte
	i int
}

func (d *jsonDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value() (any, bool) {
	d.space()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, false
}

func (d *jsonDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

func (d *jsonDecoder) object() (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		if _, dup := m[k.(string)]; dup {
			return nil, false // json.Unmarshal merges; not what json.Marshal writes
		}
		m[k.(string)] = v
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *jsonDecoder) array() (any, bool) {
	d.i++ // [
	out := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return out, true
	}
	for {
		v, ok := d.value()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// str reads a string without escapes; false for one with any (or with a
// control character or a byte that is not plain ASCII or UTF-8 json.Marshal
// would have written).
func (d *jsonDecoder) str() (any, bool) {
	start := d.i + 1
	for i := start; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			d.i = i + 1
			return string(d.b[start:i]), true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

func (d *jsonDecoder) number() (any, bool) {
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
			d.i++
			continue
		}
		break
	}
	raw := string(d.b[start:d.i])
	if !validNumber(raw) {
		return nil, false
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

// validNumber reports whether s is a JSON number: -?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
