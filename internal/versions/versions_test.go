package versions

import "testing"

func TestCompare(t *testing.T) {
	for _, tt := range []struct {
		a, b  string
		order int
	}{
		{"v25.3.4", "v25.10.1", -1},
		{"25.10.1", "v25.10.1", 0},
		{"580.95.05", "580.95.5", 0},
		{"580.95.05", "570.124.06", 1},
		{"570", "570.1", -1},
		{"v26.7.0-rc.1", "v26.7.0", -1},
		{"v26.7.0-rc.10", "v26.7.0-rc.9", 1},
		{"v26.7.0+build.2", "v26.7.0+build.1", 0},
		{"1.31.4", "1.30", 1},
	} {
		got, ok := Compare(tt.a, tt.b)
		if !ok || got != tt.order {
			t.Errorf("Compare(%q, %q) = %d, %t; want %d", tt.a, tt.b, got, ok, tt.order)
		}
	}
	if _, ok := Compare("(devel)", "v1.0.0"); ok {
		t.Error("a build without a version has an order")
	}
}

func TestReleaseAndRange(t *testing.T) {
	rc := MustParse("v25.10.0-rc.1")
	if !rc.Less(MustParse("25.10.0")) || !rc.Release().AtLeast(MustParse("25.10.0")) || rc.Release().String() != "25.10.0" {
		t.Errorf("release of %s: %s", rc, rc.Release())
	}
	r, err := ParseRange(">=0.8.0 <0.9.0")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Contains(MustParse("0.8.3")) || r.Contains(MustParse("0.9.0")) {
		t.Error("range >=0.8.0 <0.9.0")
	}
	if _, err := ParseRange("not a range"); err == nil {
		t.Error("a bad range parses")
	}
}

func TestDriverForms(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"580.95.05", "580.95.5", true},
		{"580.95.5", "580.95.05", true},
		{"570.172.08", "570.172.08", true},
		{"580.95.05", "580.95.15", false},
		{"580.95.05", "570.172.08", false},
		{"latest", "latest", true},
		{"latest", "580.95.05", false},
	} {
		if got := SameDriver(tt.a, tt.b); got != tt.same {
			t.Errorf("SameDriver(%q, %q) = %t, want %t", tt.a, tt.b, got, tt.same)
		}
	}
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"580.95.5", "580.95.05", true},
		{"580.95.05", "580.95.05", true},
		{"570.172.8", "570.172.08", true},
		{"550.54.14", "550.54.14", true},
		{"v580.95.5", "580.95.05", true},
		{"580", "", false},
		{"580.95", "", false},
		{"580.95.5-rc.1", "", false},
		{"not a version", "", false},
	} {
		got, ok := NVIDIADriver(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NVIDIADriver(%q) = %q, %t; want %q, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
