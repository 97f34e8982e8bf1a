package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Problem is one thing wrong with a fleet file, with where it is.
type Problem struct {
	File string
	// Line and Column are 1-based and always set: a problem of the whole
	// file (an empty one, a missing table) is at 1:1, so that every message
	// reads file:line:col and editors and CI annotations can place it.
	Line, Column int
	// Key is the path of the offending key, e.g. "waves[1].canary".
	Key     string
	Message string
}

// String formats the problem as "file:line:col: key: message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	fmt.Fprintf(&b, ":%d:%d", max(p.Line, 1), max(p.Column, 1))
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem found in a fleet file. It is the error Load and
// Parse return for invalid input.
type Problems []Problem

// Error lists every problem, one per line, in file order.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (ps Problems) sorted() Problems {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), strings.Compare(a.Key, b.Key), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(out)
}

// problemList collects problems while validating, placing each at its key.
type problemList struct {
	file string
	pos  positionIndex
	list Problems
}

// add records a problem at key (or, when key itself is absent from the
// file, at its nearest enclosing table).
func (l *problemList) add(key, format string, args ...any) {
	line, col := l.pos.lookup(key)
	l.addAt(line, col, key, fmt.Sprintf(format, args...))
}

// addAt records a problem at line and col; a problem with no place in the
// file (the key is absent and so is every table above it) is a problem of
// the whole file, reported at its start.
func (l *problemList) addAt(line, col int, key, msg string) {
	if line < 1 {
		line, col = 1, 1
	}
	l.list = append(l.list, Problem{File: l.file, Line: line, Column: max(col, 1), Key: key, Message: msg})
}

func itoa(i int) string { return fmt.Sprint(i) }
