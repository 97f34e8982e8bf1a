package fleet

import (
	"strings"
	"testing"
)

// TestNetworkKeys covers the network side of the fleet file: a release's
// OFED driver version (optional, in the form its Network Operator version's
// webhook accepts) and a pool's managed NICs and GPUDirect RDMA, each
// problem at its key.
func TestNetworkKeys(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	// r1 runs Network Operator v25.4.0, r2 v25.10.0; pool h100 of stg is
	// on lines 14-17.
	const r1, r2, stgPool = `network-operator = "v25.4.0"`, `network-operator = "v25.10.0"`, "nodes = 4\n"
	t.Run("accepted", func(t *testing.T) {
		s := strings.Replace(base, r1, r1+"\n"+`ofed-driver = "25.04-0.6.1.0-2"`, 1)
		s = strings.Replace(s, r2, r2+"\n"+`ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"`, 1)
		s = strings.Replace(s, stgPool, stgPool+"managed-nics = true\ngpudirect-rdma = true\n", 1)
		f, err := Parse("f.toml", []byte(s))
		if err != nil {
			t.Fatalf("the network keys must parse:\n%v", err)
		}
		if got := f.Releases["r2"].OFEDDriver; got != "doca3.2.0-25.10-1.2.8.0-2" {
			t.Errorf("r2 ofed-driver = %q", got)
		}
		p := f.Clusters["stg"].Pools[0]
		if !p.ManagedNICs || !p.GPUDirectRDMA {
			t.Errorf("pool h100: managed-nics %t gpudirect-rdma %t, want both", p.ManagedNICs, p.GPUDirectRDMA)
		}
		if !f.Clusters["stg"].ManagesNICs() || !f.Clusters["stg"].UsesGPUDirectRDMA() || f.Clusters["prod-a"].ManagesNICs() || f.Clusters["prod-a"].UsesGPUDirectRDMA() {
			t.Error("ManagesNICs/UsesGPUDirectRDMA: want stg only")
		}
	})
	t.Run("ofed-driver on a fleet whose pools manage no NICs is accepted", func(t *testing.T) {
		// Nothing to write for it yet: a pool that gains managed-nics later
		// gets the release's OFED driver.
		s := strings.Replace(base, r2, r2+"\n"+`ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"`, 1)
		if _, err := Parse("f.toml", []byte(s)); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{
			name: "a DOCA version on an operator whose webhook predates it",
			edit: func(s string) string {
				return strings.Replace(s, r1, r1+"\n"+`ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"`, 1)
			},
			want: []string{`f.toml:4:1: releases.r1.ofed-driver: "doca3.2.0-25.10-1.2.8.0-2" is not an OFED driver version Network Operator v25.4.0 accepts (its webhook checks ^(\d+\.\d+-\d+(\.\d+)*(-\d+)?)$), e.g. "25.04-0.6.1.0-2"`},
		},
		{
			name: "not a version at all",
			edit: func(s string) string {
				return strings.Replace(s, r2, r2+"\n"+`ofed-driver = "latest"`, 1)
			},
			want: []string{`f.toml:9:1: releases.r2.ofed-driver: "latest" is not an OFED driver version Network Operator v25.10.0 accepts (its webhook checks ^(sha256:[a-fA-F0-9]{64}|doca\d+\.\d+(\.\d+)?-\d+\.\d+-\d+\.\d+\.\d+\.\d+-\d+(-[\w\.\-]+)*|\d+\.\d+-\d+(\.\d+)*(-\d+)?(-[\w\.\-]+)*)$), e.g. "doca3.2.0-25.10-1.2.8.0-2"`},
		},
		{
			name: "ofed-driver without the network operator",
			edit: func(s string) string {
				return strings.Replace(s, r2, `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"`, 1)
			},
			want: []string{`f.toml:8:1: releases.r2.ofed-driver: ofed-driver needs network-operator: the OFED driver is the Network Operator's (its NicClusterPolicy), and the release installs none`},
		},
		{
			name: "gpudirect-rdma without managed NICs",
			edit: func(s string) string {
				return strings.Replace(s, stgPool, stgPool+"gpudirect-rdma = true\n", 1)
			},
			want: []string{`f.toml:18:1: clusters.stg.pools[0].gpudirect-rdma: gpudirect-rdma needs managed-nics = true: GPUDirect RDMA builds the GPU driver against the Network Operator's OFED driver, which runs only on pools whose NICs it manages`},
		},
		{
			name: "misspelt pool key",
			edit: func(s string) string {
				return strings.Replace(s, stgPool, stgPool+"managed-nic = true\n", 1)
			},
			want: []string{`f.toml:18:1: clusters.stg.pools[0].managed-nic: unknown key`},
		},
		{
			name: "misspelt release key",
			edit: func(s string) string {
				return strings.Replace(s, r1, r1+"\n"+`ofed = "25.04-0.6.1.0-2"`, 1)
			},
			want: []string{`f.toml:4:1: releases.r1.ofed: unknown key`},
		},
		{
			name: "managed-nics must be a boolean",
			edit: func(s string) string {
				return strings.Replace(s, stgPool, stgPool+"managed-nics = \"yes\"\n", 1)
			},
			want: []string{`f.toml:18:16: clusters.stg.pools[0].managed-nics: wrong type: got a string, want true or false`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantProblems(t, tt.edit(base), tt.want) })
	}
}

// TestOFEDVersionForm holds the table to the forms each Network Operator
// version's webhook accepts, with the default DOCA driver each shared
// chart version ships (hack/release.yaml at its tag).
func TestOFEDVersionForm(t *testing.T) {
	tests := []struct {
		operator, version string
		ok                bool
	}{
		{"v25.4.0", "25.04-0.6.1.0-2", true},
		{"v25.4.0", "doca3.2.0-25.10-1.2.8.0-2", false},
		{"v25.10.0", "doca3.2.0-25.10-1.2.8.0-2", true},
		{"v25.10.0", "25.04-0.6.1.0-2", true},
		{"v25.10.0", "doca3.1-25.07-0.9.7.0-0-5.14.0-427.87.1.el9_4.x86_64-rhcos4.18-amd64", true},
		{"v26.4.1", "doca3.4.1-26.04-1.1.0.0-1", true},
		{"v26.4.1", "sha256:9a831bfdf85f313b1f5749b7c9b2673bb8fff18b4ff768c9242dabaa4468e449", true},
		{"v26.4.1", "v26.04", false},
		{"v25.7.0", "doca3.1.0-25.07-0.6.6.0-0", true},
		{"v25.7.0", "doca3.1-25.07-0.9.7.0-0", false},
		{"v24.1.0", "24.01-0.3.3.1-0", false},
		{"v25.10.0-rc.1", "doca3.2.0-25.10-1.2.8.0-2", true},
	}
	for _, tt := range tests {
		re, _ := OFEDVersionForm(tt.operator)
		if re == nil {
			t.Errorf("%s: no form", tt.operator)
			continue
		}
		if got := re.MatchString(tt.version); got != tt.ok {
			t.Errorf("Network Operator %s, OFED %q: accepted %t, want %t", tt.operator, tt.version, got, tt.ok)
		}
	}
	if re, _ := OFEDVersionForm("not-a-version"); re != nil {
		t.Error("an unreadable operator version has no form")
	}
}

// TestManagedNICsNeedTheGPUFleetActuator: once the stable release or the
// one being rolled out names an OFED driver, a pool with managed NICs on a
// cluster of the gpu-operator actuator is refused at its managed-nics key,
// naming the release and where the actuator is set; a cluster on gpufleet's
// actuator, a pool without managed NICs, and an OFED driver only an idle
// release names are accepted.
func TestManagedNICsNeedTheGPUFleetActuator(t *testing.T) {
	base := mustRead(t, "testdata/minimal.toml")
	const r1, r2, stgPool = `network-operator = "v25.4.0"`, `network-operator = "v25.10.0"`, "nodes = 4\n"
	ofed1 := [2]string{r1, r1 + "\n" + `ofed-driver = "25.04-0.6.1.0-2"`}
	ofed2 := [2]string{r2, r2 + "\n" + `ofed-driver = "doca3.2.0-25.10-1.2.8.0-2"`}
	nics := [2]string{stgPool, stgPool + "managed-nics = true\n"}
	onCluster := [2]string{"[promotion]\n", "[policy.clusters.stg]\nactuator = \"gpu-operator\"\n\n[promotion]\n"}
	onFleet := [2]string{"[policy]\n", "[policy]\nactuator = \"gpu-operator\"\n"}
	rollout := [2]string{`stable = "r1"`, "stable = \"r1\"\nrollout = { release = \"r2\", wave = \"staging\" }"}
	edit := func(edits ...[2]string) string {
		s := base
		for _, e := range edits {
			if !strings.Contains(s, e[0]) {
				t.Fatalf("testdata/minimal.toml no longer has %q", e[0])
			}
			s = strings.Replace(s, e[0], e[1], 1)
		}
		return s
	}
	const why = `: the GPU Operator's and the Network Operator's upgrade controllers each cordon, drain and uncordon a node on their own, so one maintenance for both drivers cannot be had through them`
	tests := []struct {
		name  string
		edits [][2]string
		want  []string
	}{
		{
			name:  "the stable release names one, the cluster's actuator is gpu-operator",
			edits: [][2]string{ofed1, nics, onCluster},
			want:  []string{`f.toml:19:1: clusters.stg.pools[0].managed-nics: managed-nics needs the "gpufleet" actuator when a release names an ofed-driver ("r1" names "25.04-0.6.1.0-2"), not "gpu-operator" (policy.clusters.stg.actuator)` + why},
		},
		{
			name:  "the release being rolled out names one, the fleet's actuator is gpu-operator",
			edits: [][2]string{ofed2, nics, onFleet, rollout},
			want:  []string{`f.toml:19:1: clusters.stg.pools[0].managed-nics: managed-nics needs the "gpufleet" actuator when a release names an ofed-driver ("r2" names "doca3.2.0-25.10-1.2.8.0-2"), not "gpu-operator" (policy.actuator)` + why},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantProblems(t, edit(tt.edits...), tt.want) })
	}
	for name, edits := range map[string][][2]string{
		"gpufleet's actuator":                     {ofed1, nics},
		"no pool manages NICs":                    {ofed1, onCluster},
		"only a release not rolled out names one": {ofed2, nics, onCluster},
	} {
		t.Run(name+" is accepted", func(t *testing.T) {
			if _, err := Parse("f.toml", []byte(edit(edits...))); err != nil {
				t.Fatal(err)
			}
		})
	}
}
