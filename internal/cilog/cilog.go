package cilog

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Line returns s as one inert line: every control character (newlines
// and tabs included) written as an escape ("\n", "\u001b"), and nothing a
// runner reads as a command (see Defuse). What a person reads stays
// readable; what a runner would obey does not survive.
func Line(s string) string { return defuse(escape(s, false)) }

// Defuse makes one line of output inert where a CI runner would read a
// command in it: "::" at its start, after spaces, becomes "%3A:"
// (GitHub's escape of a colon), and "##[" anywhere becomes "##%5B".
// Control characters other than tabs are escaped as Line escapes them.
// The line must not hold a newline.
func Defuse(line string) string { return defuse(escape(line, true)) }

func defuse(line string) string {
	if rest := strings.TrimLeftFunc(line, unicode.IsSpace); strings.HasPrefix(rest, "::") {
		line = line[:len(line)-len(rest)] + "%3A" + rest[1:]
	}
	return strings.ReplaceAll(line, "##[", "##%5B")
}

// escape writes control characters (C0, DEL, C1), the Unicode line and
// paragraph separators and the bidirectional controls (which make a line
// read differently from what it holds) as escapes valid in Go, JSON and
// YAML strings alike, so that a JSON document stays one; invalid UTF-8
// bytes as \xNN. Tabs are kept when keepTabs.
func escape(s string, keepTabs bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || needsEscape(r, keepTabs) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t' && !keepTabs:
			b.WriteString(`\t`)
		case needsEscape(r, keepTabs):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune, keepTabs bool) bool {
	switch {
	case r == '\t':
		return !keepTabs
	case unicode.IsControl(r):
		return true
	case r == '\u2028', r == '\u2029':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// Writer passes a stream to the writer below a line at a time, each line
// made inert (Defuse). A line is held until its newline or Flush.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	line []byte
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes the complete lines of p, made inert, and holds the rest.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := io.WriteString(w.w, Defuse(string(w.line[:i]))+"\n"); err != nil {
			w.line = w.line[i+1:]
			return len(p), err
		}
		w.line = w.line[i+1:]
	}
}

// Flush writes the line held, if any, made inert.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush("")
}

// flush writes the line held, then end.
func (w *Writer) flush(end string) error {
	if len(w.line) == 0 {
		return nil
	}
	_, err := io.WriteString(w.w, Defuse(string(w.line))+end)
	w.line = w.line[:0]
	return err
}

// Commands returns where gpufleet writes the workflow commands it means
// (verify's annotations, escaped by their writer): below w's Writer, after
// what it holds (ended with a newline, so a command starts its line), or
// w itself when w is no Writer.
func Commands(w io.Writer) io.Writer {
	cw, ok := w.(*Writer)
	if !ok {
		return w
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	_ = cw.flush("\n")
	return cw.w
}
