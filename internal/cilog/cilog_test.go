package cilog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// commandIn says whether a GitHub runner would read line as a command: a
// line beginning with "::" after spaces (the runner trims them), or one
// holding "##[" anywhere (the older form).
func commandIn(line string) bool {
	return strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "::") || strings.Contains(line, "##[")
}

// hostile are names a pull request can give a file, an object or a Secret.
var hostile = []string{
	"x\n::stop-commands::x",
	"::error::forged",
	"  \t::warning file=a.yaml::forged",
	"\u00a0::add-mask::x",
	"ok ##[error]forged",
	"a%0A::error::b",
	"a\r::error::b",
	"\u2028::error::b",
	"\x1b[0Ksection_start:1:fake\r\x1b[0Kheader",
	"\u0085::error::nel",
	"\x85::error::not utf-8",
	"bidi \u202e reversed",
	"bad utf-8 \xff\xfe",
}

// TestLine: hostile text becomes one line no runner reads a command in, and
// harmless text is left as it is.
func TestLine(t *testing.T) {
	for _, s := range hostile {
		got := Line(s)
		if strings.ContainsAny(got, "\n\r\x1b\u0085\u2028\u202e") || strings.Contains(got, "\x85") || commandIn(got) {
			t.Errorf("Line(%q) = %q: still a line break, an escape or a command", s, got)
		}
	}
	for _, s := range []string{"fleet.toml:12: error: lint: Secret db holds data in plaintext", "rollout r2026-10::x", "100% done", ""} {
		if got := Line(s); got != s {
			t.Errorf("Line(%q) = %q, want it unchanged", s, got)
		}
	}
	if got, want := Line("a\nb\tc"), `a\nb\tc`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	if got, want := Line("::stop-commands::x"), "%3A:stop-commands::x"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	for _, s := range hostile {
		if once := Line(s); Line(once) != once {
			t.Errorf("Line is not idempotent on %q: %q then %q", s, once, Line(once))
		}
	}
}

// TestWriter: every line through a Writer is inert however the writes cut
// it; a JSON document with control characters stays valid JSON; Commands
// writes below the Writer, after what it held.
func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	text := "verify fleet.toml\n" + strings.Join(hostile, "\n") + "\nlast line without newline ::x"
	for i := 0; i < len(text); i += 3 {
		if _, err := w.Write([]byte(text[i:min(i+3, len(text))])); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprint(Commands(w), "::error file=fleet.toml::real\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitSeq(out.String(), "\n")
	for l := range lines {
		if commandIn(l) && l != "::error file=fleet.toml::real" {
			t.Errorf("a command got through: %q", l)
		}
		if strings.ContainsAny(l, "\r\x1b\u0085") || strings.Contains(l, "\x85") {
			t.Errorf("a control character got through: %q", l)
		}
	}
	if !strings.Contains(out.String(), "last line without newline ::x\n::error file=fleet.toml::real\n") {
		t.Errorf("Commands must follow what the Writer held, unchanged:\n%s", out.String())
	}

	var doc bytes.Buffer
	w = NewWriter(&doc)
	raw, err := json.MarshalIndent(map[string]string{"name": "a\x7f\u0085b ##[error]x", "file": "x\n::stop-commands::y"}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(doc.Bytes(), &back); err != nil {
		t.Errorf("a JSON document through a Writer is no longer JSON: %v\n%s", err, doc.String())
	}
	if strings.Contains(doc.String(), "##[") {
		t.Errorf("##[ got through: %s", doc.String())
	}
}
