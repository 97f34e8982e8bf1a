package promote

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Edit rewrites the [promotion] table of a fleet file's source, which says
// cur, to say next, changing only the lines of keys whose values differ.
// Every other byte, comments, layout and line endings included, is kept: a
// replaced line keeps the ending it had, an added line takes the file's
// (CRLF in a file written on Windows).
func Edit(src []byte, cur, next fleet.Promotion) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	eol := lineEnding(lines)
	start, end, err := promotionTable(lines)
	if err != nil {
		return nil, err
	}
	type change struct {
		key   string
		same  bool
		value string // "" deletes the key
	}
	changes := []change{
		{"stable", cur.Stable == next.Stable, quote(next.Stable)},
		{"rollout", rolloutEqual(cur.Rollout, next.Rollout), rolloutValue(next.Rollout)},
		{"approved", slices.Equal(cur.Approved, next.Approved), arrayValue(next.Approved)},
		{"paused", cur.Paused == next.Paused, strconv.FormatBool(next.Paused)},
	}
	for _, c := range changes {
		if c.same {
			continue
		}
		first, last, found := findKey(lines[start:end], c.key)
		switch {
		case found && c.value == "":
			lines = slices.Delete(lines, start+first, start+last+1)
			end -= last - first + 1
		case found:
			comment := trailingComment(lines[start+last])
			lines = slices.Replace(lines, start+first, start+last+1, c.key+" = "+c.value+comment+ending(lines[start+last]))
			end -= last - first
		case c.value != "":
			at := lastKeyLine(lines, start, end) + 1
			// The line before may be the file's last, without an ending.
			if !strings.HasSuffix(lines[at-1], "\n") {
				lines[at-1] += eol
			}
			lines = slices.Insert(lines, at, c.key+" = "+c.value+eol)
			end++
		}
	}
	return []byte(strings.Join(lines, "")), nil
}

// lineEnding is the file's line ending: CRLF when most of its lines end so.
func lineEnding(lines []string) string {
	crlf, lf := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasSuffix(l, "\r\n"):
			crlf++
		case strings.HasSuffix(l, "\n"):
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// ending is the line ending of line: none for the last line of a file
// that does not end in a newline.
func ending(line string) string {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(line, "\n"):
		return "\n"
	}
	return ""
}

// promotionTable finds the lines of the [promotion] table: from its header
// (exclusive) to the next table header or the end.
func promotionTable(lines []string) (start, end int, err error) {
	start = -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if start < 0 {
			if t == "[promotion]" || strings.HasPrefix(t, "[promotion]") && strings.HasPrefix(strings.TrimSpace(t[len("[promotion]"):]), "#") {
				start = i + 1
			}
			continue
		}
		if strings.HasPrefix(t, "[") {
			return start, i, nil
		}
	}
	if start < 0 {
		return 0, 0, errors.New("the fleet file has no [promotion] table to edit: add one with `stable = \"RELEASE\"`")
	}
	return start, len(lines), nil
}

// findKey returns the first and last line of key's value in the table.
func findKey(table []string, key string) (first, last int, ok bool) {
	for i, l := range table {
		t := strings.TrimSpace(l)
		name, rest, found := strings.Cut(t, "=")
		if !found || strings.TrimSpace(name) != key || strings.HasPrefix(t, "#") {
			continue
		}
		// An array or inline table may span lines: follow its brackets.
		depth := bracketDepth(rest)
		j := i
		for depth > 0 && j+1 < len(table) {
			j++
			depth += bracketDepth(table[j])
		}
		return i, j, true
	}
	return 0, 0, false
}

// bracketDepth counts [ and { minus ] and } outside strings and comments.
func bracketDepth(s string) int {
	depth := 0
	scanCode(s, func(i int, c byte) bool {
		switch c {
		case '#':
			return false
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		return true
	})
	return depth
}

// trailingComment keeps a comment that followed a value on its last line.
func trailingComment(line string) string {
	comment := ""
	scanCode(line, func(i int, c byte) bool {
		if c != '#' {
			return true
		}
		j := i
		for j > 0 && (line[j-1] == ' ' || line[j-1] == '\t') {
			j--
		}
		comment = strings.TrimRight(line[j:], "\r\n")
		return false
	})
	return comment
}

// scanCode calls visit for each byte of s outside TOML strings, until
// visit returns false.
func scanCode(s string, visit func(i int, c byte) bool) {
	inString := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString != 0:
			if c == '\\' && inString == '"' {
				i++
			} else if c == inString {
				inString = 0
			}
		case c == '"' || c == '\'':
			inString = c
		case !visit(i, c):
			return
		}
	}
}

// lastKeyLine is the last line of the table that is not blank or a comment,
// so a new key goes right after the existing ones.
func lastKeyLine(lines []string, start, end int) int {
	last := start - 1
	for i := start; i < end; i++ {
		t := strings.TrimSpace(lines[i])
		if t != "" && !strings.HasPrefix(t, "#") {
			last = i
		}
	}
	return last
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

func arrayValue(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func rolloutValue(r *fleet.Rollout) string {
	if r == nil {
		return ""
	}
	v := fmt.Sprintf("{ release = %q, wave = %q", r.Release, r.Wave)
	if r.Stage != "" && r.Stage != fleet.StageAll {
		v += fmt.Sprintf(", stage = %q", r.Stage)
	}
	if r.Aborted {
		v += ", aborted = true"
	}
	return v + " }"
}

func rolloutEqual(a, b *fleet.Rollout) bool {
	if a == nil || b == nil {
		return a == b
	}
	norm := func(s string) string {
		if s == "" {
			return fleet.StageAll
		}
		return s
	}
	return a.Release == b.Release && a.Wave == b.Wave && norm(a.Stage) == norm(b.Stage) && a.Aborted == b.Aborted
}
