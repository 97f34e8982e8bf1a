package v1alpha1

import "testing"

func TestOFEDMatches(t *testing.T) {
	for _, tt := range []struct {
		tag, want string
		match     bool
	}{
		{"doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64", "doca3.2.0-25.10-1.2.8.0-2", true},
		{"doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64", "doca3.2.0-25.10-1.2.8.0", false},
		{"25.04-0.6.1.0-2-rhel9.4-arm64", "25.04-0.6.1.0-2", true},
		{"25.04-0.6.1.0-2", "25.04-0.6.1.0-2", true},
		{"25.04-0.6.1.0-2-", "25.04-0.6.1.0-2", false},
		{"25.04-0.6.1.0-21-ubuntu22.04-amd64", "25.04-0.6.1.0-2", false},
		{"", "25.04-0.6.1.0-2", false},
		{"25.04-0.6.1.0-2-ubuntu22.04-amd64", "", false},
	} {
		if got := OFEDMatches(tt.tag, tt.want); got != tt.match {
			t.Errorf("OFEDMatches(%q, %q) = %t, want %t", tt.tag, tt.want, got, tt.match)
		}
	}
}

// TestOFEDTagVersion: the version a tag names is the one OFEDMatches
// matches it with, and nothing for a tag the Network Operator did not write.
func TestOFEDTagVersion(t *testing.T) {
	for tag, want := range map[string]string{
		"doca3.2.0-25.10-1.2.8.0-2-ubuntu22.04-amd64": "doca3.2.0-25.10-1.2.8.0-2",
		"25.04-0.6.1.0-2-rhel9.4-arm64":               "25.04-0.6.1.0-2",
		"25.04-0.6.1.0-2-ubuntu22.04":                 "25.04-0.6.1.0-2",
		"25.04-0.6.1.0-2":                             "",
		"25.04-0.6.1.0-2-":                            "",
		"latest":                                      "",
		"":                                            "",
	} {
		got := OFEDTagVersion(tag)
		if got != want {
			t.Errorf("OFEDTagVersion(%q) = %q, want %q", tag, got, want)
		}
		if got != "" && !OFEDMatches(tag, got) {
			t.Errorf("OFEDMatches(%q, OFEDTagVersion) = false", tag)
		}
	}
}

func TestDriverTagVersion(t *testing.T) {
	for tag, want := range map[string]string{
		"580.95.05-ubuntu22.04":  "580.95.05",
		"550.54-rhel9.4":         "550.54",
		"580.95.05":              "580.95.05",
		"535.1.2.3-ubuntu22.04":  "535.1.2.3",
		"535.1.2.3.4-ubuntu":     "",
		"570-5.15.0-139-generic": "",
		"580.95.-ubuntu22.04":    "",
		"latest":                 "",
		"":                       "",
	} {
		if got := DriverTagVersion(tag); got != want {
			t.Errorf("DriverTagVersion(%q) = %q, want %q", tag, got, want)
		}
	}
}
