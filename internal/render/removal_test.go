package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// networkOperatorFiles are the rendered files of cluster that install the
// Network Operator.
func networkOperatorFiles(out *Output, cluster string) []string {
	var files []string
	for path := range out.Files {
		if strings.HasPrefix(path, "clusters/"+cluster+"/") && strings.Contains(path, "helmrelease-network-operator") {
			files = append(files, path)
		}
	}
	return files
}

// TestNoNetworkOperatorRendersNone: network-operator = "none" renders
// exactly what a release without the key renders, byte for byte, and
// neither installs the Network Operator; a rollout of a "none" release
// removes it from the clusters it reaches and leaves the others theirs.
func TestNoNetworkOperatorRendersNone(t *testing.T) {
	// The example's releases each run a Network Operator with an OFED
	// driver, which needs it: each edit takes both out of all three.
	var none, absent [][2]string
	for _, v := range []struct{ netop, ofed string }{
		{`network-operator = "v25.4.0"`, `ofed-driver = "25.04-0.6.1.0-2"   # the Network Operator's OFED (DOCA) driver` + "\n"},
		{`network-operator = "v25.10.0"`, `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n"},
		{`network-operator = "v25.10.0"`, `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n"},
	} {
		none = append(none, [2]string{v.netop, `network-operator = "none"`}, [2]string{v.ofed, ""})
		absent = append(absent, [2]string{v.netop + "\n", ""}, [2]string{v.ofed, ""})
	}
	withOp, err := Render(networkFleet(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(networkOperatorFiles(withOp, "stg-h100")) == 0 {
		t.Fatal("the example fleet installs no Network Operator on stg-h100: nothing to take away")
	}
	outNone, err := Render(networkFleet(t, none...))
	if err != nil {
		t.Fatal(err)
	}
	outAbsent, err := Render(networkFleet(t, absent...))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outAbsent.Files, outNone.Files); diff != "" {
		t.Errorf(`network-operator = "none" renders differently from no network-operator (-absent +none):\n%s`, diff)
	}
	for _, c := range []string{"stg-h100", "prod-h100-a", "prod-a100"} {
		if files := networkOperatorFiles(outNone, c); len(files) > 0 {
			t.Errorf(`%s: network-operator = "none" still installs the Network Operator: %v`, c, files)
		}
	}

	// r2026-10 says "none" and is rolled out to the staging wave alone.
	f := networkFleet(t,
		[2]string{`network-operator = "v25.10.0"` + "\n" + `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"` + "\n", `network-operator = "none"` + "\n"},
		[2]string{`stable = "r2026-06"`, "stable = \"r2026-06\"\nrollout = { release = \"r2026-10\", wave = \"staging\" }"})
	out, err := Render(f)
	if err != nil {
		t.Fatal(err)
	}
	if files := networkOperatorFiles(out, "stg-h100"); len(files) > 0 {
		t.Errorf("stg-h100, reached by a release that runs none, still installs the Network Operator: %v", files)
	}
	if len(networkOperatorFiles(out, "prod-h100-a")) == 0 {
		t.Error("prod-h100-a, on the stable release, lost its Network Operator")
	}
}
