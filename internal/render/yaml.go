package render

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// A YAML writer for what render writes, byte for byte what goyaml.v2 writes.
//
// goyaml.v2's emitter (a port of libyaml's state machine) took most of
// render's time: a fleet of 5,000 clusters is 150,000 files. The objects
// render writes are small trees of maps with sorted keys, lists and short
// scalars, and for those goyaml.v2's output follows a few fixed rules:
// block mappings and lists, a list under a key at the key's own indent,
// {} and [] for empty ones, plain scalars unless a scalar would read back
// as something else. fastYAML writes those itself and asks goyaml.v2 for
// each scalar it is not sure of (once per distinct scalar); anything else
// — a key order goyaml.v2 sorts differently (digits compare as numbers
// there), a string with a space or a line break (goyaml.v2 may fold or
// block it by its column), a key it would write as a complex key — makes
// the whole object go through goyaml.v2. TestFastYAMLIsGoyaml holds it to
// goyaml.v2's bytes on everything render writes.

// fastYAML writes v (as encoding/json decodes into any) as goyaml.v2.Marshal
// would; false when v holds something it leaves to goyaml.v2.
func fastYAML(v map[string]any) ([]byte, bool) {
	w := yamlWriter{buf: make([]byte, 0, 1024)}
	if len(v) == 0 {
		return []byte("{}\n"), true
	}
	if !w.mapping(v, 0, false) {
		return nil, false
	}
	return w.buf, true
}

type yamlWriter struct {
	buf []byte
}

func (w *yamlWriter) indent(n int) {
	for range n {
		w.buf = append(w.buf, ' ')
	}
}

// mapping writes the entries of m at indent; inline says the first key
// goes on the current line (after "- ").
func (w *yamlWriter) mapping(m map[string]any, indent int, inline bool) bool {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 && !sameOrderAsGoyaml(keys[i-1], k) {
			return false
		}
		key, ok := scalarString(k)
		if !ok || len(k) > 128 {
			return false
		}
		if i > 0 || !inline {
			w.indent(indent)
		}
		w.buf = append(w.buf, key...)
		w.buf = append(w.buf, ':')
		if !w.value(m[k], indent) {
			return false
		}
	}
	return true
}

// value writes v after "key:" of a mapping at indent.
func (w *yamlWriter) value(v any, indent int) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			w.buf = append(w.buf, " {}\n"...)
			return true
		}
		w.buf = append(w.buf, '\n')
		return w.mapping(x, indent+2, false)
	case []any:
		if len(x) == 0 {
			w.buf = append(w.buf, " []\n"...)
			return true
		}
		w.buf = append(w.buf, '\n')
		return w.sequence(x, indent)
	default:
		s, ok := scalarAt(v, w.column()+1)
		if !ok {
			return false
		}
		w.buf = append(w.buf, ' ')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\n')
		return true
	}
}

// column is where the next byte goes on the current line.
func (w *yamlWriter) column() int {
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		return len(w.buf) - i - 1
	}
	return len(w.buf)
}

// sequence writes the items of l, each "- " at indent.
func (w *yamlWriter) sequence(l []any, indent int) bool {
	for _, item := range l {
		w.indent(indent)
		w.buf = append(w.buf, '-')
		switch x := item.(type) {
		case map[string]any:
			if len(x) == 0 {
				w.buf = append(w.buf, " {}\n"...)
				continue
			}
			w.buf = append(w.buf, ' ')
			if !w.mapping(x, indent+2, true) {
				return false
			}
		case []any:
			return false // a list in a list: rare, left to goyaml.v2
		default:
			s, ok := scalarAt(item, indent+2)
			if !ok {
				return false
			}
			w.buf = append(w.buf, ' ')
			w.buf = append(w.buf, s...)
			w.buf = append(w.buf, '\n')
		}
	}
	return true
}

// scalarAt writes a JSON scalar that starts at column as goyaml.v2 does.
func scalarAt(v any, column int) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", false
		}
		// goyaml.v2's floatv.
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case string:
		if plainWithSpaces(x) && column+len(x) <= yamlWidth {
			// goyaml.v2 breaks a plain scalar only at a space past its
			// width: this line never gets there.
			return x, true
		}
		return scalarString(x)
	}
	return "", false
}

// yamlWidth is goyaml.v2's line width (best_width).
const yamlWidth = 80

// plainWithSpaces reports whether s is plainly a string made of words
// plainString allows, one space apart.
func plainWithSpaces(s string) bool {
	if !strings.Contains(s, " ") {
		return false
	}
	for w := range strings.SplitSeq(s, " ") {
		if w == "" || !plainWord(w) {
			return false
		}
	}
	return plainString(s[:strings.IndexByte(s, ' ')])
}

// scalarString writes a string scalar (a value or a key) as goyaml.v2
// does: plain when it is plainly a string, else as goyaml.v2 writes it
// alone, which for a short single-line string without spaces does not
// depend on where it stands.
func scalarString(s string) (string, bool) {
	if plainString(s) {
		return s, true
	}
	if len(s) > 64 || strings.ContainsAny(s, " \t\n\r") || !utf8.ValidString(s) {
		return "", false
	}
	if q, ok := quotedStrings.Load(s); ok {
		return q.(string), true
	}
	b, err := goyaml.Marshal(s)
	if err != nil {
		return "", false
	}
	q := strings.TrimSuffix(string(b), "\n")
	if strings.Contains(q, "\n") {
		return "", false
	}
	// Bounded by what render writes: names, versions, labels.
	quotedStrings.Store(s, q)
	return q, true
}

// quotedStrings memoizes goyaml.v2's spelling of the strings that are not
// plainly strings ("0.9", "true", "", "*").
var quotedStrings sync.Map

// plainString reports whether goyaml.v2 writes s as it is: it starts with a
// letter, holds only letters, digits and -._/ (and : not before a space or
// at the end), and is none of YAML 1.1's words for booleans and null.
func plainString(s string) bool {
	if s == "" || !isASCIILetter(s[0]) || !plainWord(s) {
		return false
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// plainWord reports whether s holds only letters, digits and -._/ (and :
// not at its end).
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isASCIILetter(c) || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '/':
		case c == ':' && i+1 < len(s) && s[i+1] != ' ':
		default:
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// sameOrderAsGoyaml reports whether goyaml.v2 also puts a before b (a < b
// bytewise): it compares runs of digits as numbers and puts other
// characters before letters, so the two orders agree where a and b first
// differ in anything but digits, unless a has a letter there and b not. Anything else is left to goyaml.v2.
// a and b are sorted bytewise already.
func sameOrderAsGoyaml(a, b string) bool {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] == b[i] {
			continue
		}
		ca, cb := a[i], b[i]
		if ca >= 0x80 || cb >= 0x80 || isDigit(ca) || isDigit(cb) || (i > 0 && isDigit(a[i-1])) {
			return false
		}
		// Two letters, or two of the rest: both compare the bytes. A
		// letter against anything else: goyaml.v2 puts the other first,
		// as byte order does only when the letter is b's.
		return isASCIILetter(ca) == isASCIILetter(cb) || isASCIILetter(cb)
	}
	return true // a is a prefix of b: shorter first in both
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
