package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// withFreeze appends one [[policy.freezes]] entry to the minimal fleet.
func withFreeze(t *testing.T, entry string) string {
	t.Helper()
	return mustRead(t, "testdata/minimal.toml") + "\n[[policy.freezes]]\n" + entry
}

// TestFreezeNeedsOffsetOrTimeZone: a freeze bound written as a TOML local
// date-time (no offset) would be read in each machine's time zone; it is
// refused unless the freeze names its time-zone, and so are dates, times of
// day, quoted strings and an offset that contradicts the time-zone.
func TestFreezeNeedsOffsetOrTimeZone(t *testing.T) {
	tests := []struct {
		name, entry string
		want        []string
	}{
		{
			name:  "local date-times without a time zone",
			entry: "start = 2026-12-21T00:00:00\nend = 2027-01-04T00:00:00\n",
			want: []string{
				`f.toml:54:1: policy.freezes[0].start: start 2026-12-21T00:00:00 has no offset, so each machine would read it in its own time zone: add one (2026-12-21T00:00:00Z or 2026-12-21T00:00:00+01:00) or set time-zone, e.g. time-zone = "Europe/Berlin"`,
				`f.toml:55:1: policy.freezes[0].end: end 2027-01-04T00:00:00 has no offset, so each machine would read it in its own time zone: add one (2027-01-04T00:00:00Z or 2027-01-04T00:00:00+01:00) or set time-zone, e.g. time-zone = "Europe/Berlin"`,
			},
		},
		{
			name:  "dates, times of day and strings",
			entry: "start = 2026-12-21\nend = 10:00:00\n[[policy.freezes]]\nstart = \"2026-12-21T00:00:00Z\"\nend = 2027-01-04T00:00:00Z\n",
			want: []string{
				`f.toml:54:1: policy.freezes[0].start: start 2026-12-21 is a date: a freeze needs a date-time with an offset, e.g. 2026-12-21T00:00:00Z`,
				`f.toml:55:1: policy.freezes[0].end: end 10:00:00 is a time of day: a freeze needs a date-time with an offset, e.g. 2026-12-21T10:00:00Z`,
				`f.toml:57:1: policy.freezes[1].start: start is a string: write the date-time without quotes, e.g. start = 2026-12-21T00:00:00Z`,
			},
		},
		{
			name:  "an offset and a time zone",
			entry: "start = 2026-12-21T00:00:00+01:00\nend = 2027-01-04T00:00:00\ntime-zone = \"Europe/Berlin\"\n",
			want: []string{
				`f.toml:54:1: policy.freezes[0].start: start 2026-12-21T00:00:00+01:00 has its own offset and the freeze sets time-zone "Europe/Berlin": write a local date-time (2026-12-21T00:00:00) or drop time-zone`,
			},
		},
		{
			name:  "unknown or machine time zone",
			entry: "start = 2026-12-21T00:00:00\nend = 2027-01-04T00:00:00\ntime-zone = \"Local\"\n",
			want: []string{
				`f.toml:56:1: policy.freezes[0].time-zone: unknown time zone "Local": use an IANA name such as UTC or Europe/Berlin`,
			},
		},
		{
			name:  "missing end",
			entry: "start = 2026-12-21T00:00:00Z\n",
			want: []string{
				`f.toml:53:3: policy.freezes[0].end: end is required: a date-time with an offset, e.g. 2026-12-21T00:00:00Z`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, problemStrings(t, withFreeze(t, tt.entry))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}

	// Accepted: an offset, or a local date-time in the freeze's own zone.
	want := []Freeze{
		{Start: time.Date(2026, 12, 20, 23, 0, 0, 0, time.UTC), End: time.Date(2027, 1, 3, 23, 0, 0, 0, time.UTC), Reason: "berlin"},
		{Start: time.Date(2026, 12, 20, 23, 0, 0, 0, time.UTC), End: time.Date(2027, 1, 3, 23, 0, 0, 0, time.UTC), Reason: "offset"},
	}
	f, err := Parse("f.toml", []byte(withFreeze(t, "start = 2026-12-21T00:00:00\nend = 2027-01-04T00:00:00\ntime-zone = \"Europe/Berlin\"\nreason = \"berlin\"\n"+
		"[[policy.freezes]]\nstart = 2026-12-21T00:00:00+01:00\nend = 2027-01-04T00:00:00+01:00\nreason = \"offset\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, f.PolicyFor("stg").Freezes); diff != "" {
		t.Errorf("freezes (-want +got):\n%s", diff)
	}
}

// TestFreezeInstantDoesNotDependOnTZ reads the same freezes in processes
// with different TZ settings (the time package reads TZ once, at start):
// every one must see the same instants, and refuse the same local date-time.
func TestFreezeInstantDoesNotDependOnTZ(t *testing.T) {
	const child = "GPUFLEET_FREEZE_TZ_CHILD"
	src := withFreeze(t, "start = 2026-12-21T00:00:00\nend = 2027-01-04T00:00:00\ntime-zone = \"America/New_York\"\n"+
		"[[policy.freezes]]\nstart = 2027-03-01T08:00:00-08:00\nend = 2027-03-01T20:00:00Z\n")
	bare := withFreeze(t, "start = 2026-12-21T00:00:00\nend = 2027-01-04T00:00:00\n")
	if os.Getenv(child) != "" {
		f, err := Parse("f.toml", []byte(src))
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, fz := range f.PolicyFor("stg").Freezes {
			fmt.Println(fz.Start.Format(time.RFC3339Nano), fz.End.Format(time.RFC3339Nano))
		}
		_, err = Parse("f.toml", []byte(bare))
		fmt.Println("bare local date-time accepted:", err == nil)
		return
	}
	var first string
	for _, tz := range []string{"UTC", "Asia/Tokyo", "America/Los_Angeles", "Pacific/Kiritimati", "Europe/Berlin", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFreezeInstantDoesNotDependOnTZ$", "-test.count=1")
		cmd.Env = append(os.Environ(), child+"=1", "TZ="+tz)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("TZ=%s: %v\n%s", tz, err, out)
		}
		got := strings.TrimSuffix(strings.TrimSpace(string(out)), "PASS")
		if !strings.Contains(got, "2026-12-21T05:00:00Z 2027-01-04T05:00:00Z\n2027-03-01T16:00:00Z 2027-03-01T20:00:00Z\nbare local date-time accepted: false") {
			t.Errorf("TZ=%q: got\n%s", tz, got)
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("TZ=%q reads the freezes differently:\n%s\nwant\n%s", tz, got, first)
		}
	}
}
