package doccheck

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// MaxLine is the longest line a page may have, in characters: longer lines
// are a table or a paragraph that nobody can read in a diff.
const MaxLine = 200

// Link is one inline link or image of a page.
type Link struct {
	Line   int
	Target string
}

var (
	// An inline link or image: [text](target "title"); the text may hold
	// one level of brackets ([`[policy]`](fleet-file.md#policy)).
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// lines returns the page's lines with fenced code blocks blanked, so
// nothing inside them counts as a link or a heading.
func lines(src []byte) []string {
	all := strings.Split(string(src), "\n")
	fence := ""
	for i, l := range all {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			all[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			all[i] = ""
		}
	}
	return all
}

// Links returns the inline links and images of a page, outside code.
func Links(src []byte) []Link {
	var out []Link
	for i, l := range lines(src) {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}

// Anchors returns the anchors a page defines: GitHub's identifier of each
// heading (with -1, -2… for repeats) and explicit <a id>/<a name> anchors.
func Anchors(src []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines(src) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id := Slug(m[2])
		if n := seen[id]; n > 0 {
			out[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

// Slug is the anchor GitHub gives a heading: its text without link
// targets, lower case, spaces made hyphens, and every character that is
// not a letter, digit, hyphen or underscore left out.
func Slug(text string) string {
	text = inlineLink.ReplaceAllStringFunc(text, func(s string) string {
		opening := strings.Index(s, "[")
		closing := strings.LastIndex(s, "](")
		return s[opening+1 : closing]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Check checks the pages named (paths relative to root, with slashes) and
// returns one error per broken relative link or anchor and per line over
// MaxLine, each naming the page and line.
func Check(root string, pages []string) []error {
	c := checker{root: root, anchors: map[string]map[string]bool{}}
	var errs []error
	for _, page := range pages {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Reported in line order: the long lines and the links of a line.
		byLine := map[int][]error{}
		for i, l := range strings.Split(string(src), "\n") {
			if n := len([]rune(l)); n > MaxLine {
				byLine[i+1] = append(byLine[i+1], fmt.Errorf("%s:%d: a line of %d characters, over %d: wrap it (a table row that long reads better as a list)", page, i+1, n, MaxLine))
			}
		}
		for _, l := range Links(src) {
			if err := c.link(page, l.Target); err != nil {
				byLine[l.Line] = append(byLine[l.Line], fmt.Errorf("%s:%d: %s: %w", page, l.Line, l.Target, err))
			}
		}
		for _, n := range slices.Sorted(maps.Keys(byLine)) {
			errs = append(errs, byLine[n]...)
		}
	}
	return errs
}

// checker resolves links against root, reading each target page's anchors
// once.
type checker struct {
	root    string
	anchors map[string]map[string]bool
}

// link checks one link target of page; absolute URLs are not checked.
func (c checker) link(page, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	if u.Scheme != "" || u.Host != "" {
		return nil
	}
	path := page
	if u.Path != "" {
		if strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("a path from the site's root: make it relative to the page")
		}
		path = filepath.ToSlash(filepath.Join(filepath.Dir(page), u.Path))
	}
	if _, err := os.Stat(filepath.Join(c.root, path)); err != nil {
		return fmt.Errorf("no such file %s", path)
	}
	if u.Fragment == "" {
		return nil
	}
	if !strings.HasSuffix(path, ".md") {
		return fmt.Errorf("an anchor in %s, which is not a Markdown page", path)
	}
	a, ok := c.anchors[path]
	if !ok {
		src, err := os.ReadFile(filepath.Join(c.root, path))
		if err != nil {
			return err
		}
		a = Anchors(src)
		c.anchors[path] = a
	}
	if !a[u.Fragment] {
		return fmt.Errorf("%s has no heading with the anchor #%s", path, u.Fragment)
	}
	return nil
}
