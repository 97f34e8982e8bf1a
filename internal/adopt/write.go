package adopt

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
	"github.com/gpufleet/gpufleet/internal/fleet"
)

// Write prints the fleet file of f: deterministic (the same fleet, the
// same bytes), commented the way examples/fleet.toml is, and in its order:
// [charts], the release, the clusters with their pools and operators as
// found, the waves, the policy, [promotion].
//
// Both operator tables are written whenever the operator was found, even
// where the release and namespace are the defaults: the table is what says
// render adopts this Helm release instead of installing its own, and it
// keeps saying so if a later gpufleet changed its defaults.
func Write(f *Fleet) []byte {
	w := &writer{}
	w.header(f)
	w.charts(f)
	w.release(f)
	w.clusters(f)
	w.waves(f)
	w.policy(f)
	w.promotion(f)
	return []byte(w.String())
}

type writer struct{ strings.Builder }

func (w *writer) line(format string, args ...any) {
	fmt.Fprintf(w, format, args...)
	w.WriteByte('\n')
}

// comment writes text as "# " lines, wrapped at 78 columns.
func (w *writer) comment(text string) {
	for para := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(para, "  ") {
			// An indented line (an example) is kept as it is.
			w.line("# %s", para)
			continue
		}
		line := "#"
		for word := range strings.FieldsSeq(para) {
			if len(line)+1+len(word) > 78 && line != "#" {
				w.line("%s", line)
				line = "#"
			}
			line += " " + word
		}
		w.line("%s", line)
	}
}

// section is a rule like examples/fleet.toml's, with a title.
func (w *writer) section(title string) {
	w.line("")
	w.line("# %s %s", strings.Repeat("-", 64), title)
}

// str is a TOML basic string.
func str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// key is a TOML key: bare where it can be (every name init writes is).
func key(s string) string {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return str(s)
		}
	}
	return s
}

func strList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = str(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (w *writer) header(f *Fleet) {
	w.line("# fleet.toml — the one file that says what the GPU fleet runs.")
	w.line("#")
	w.comment(fmt.Sprintf("Written by gpufleet init from what the clusters ran when it read them (%s: %s). Review it (the waves and the policy are conservative defaults), then run gpufleet render and commit both. From here on gpufleet start, promote, approve, pause and abort edit the [promotion] table at the end, one line each, and commit.",
		plural(len(f.Contexts), "kubeconfig context", "kubeconfig contexts"), strings.Join(f.Contexts, ", ")))
	w.line("")
	w.comment("Where the operator charts come from. A mirror or an air-gapped registry is one line: repository = \"oci://registry.internal.example/nvidia\".")
}

func (w *writer) charts(f *Fleet) {
	w.line("[charts]")
	w.line("repository = %s", str(f.ChartRepository))
	if f.ChartMode != "" && f.ChartMode != fleet.ModeHelmRelease {
		w.line("mode = %s", str(f.ChartMode))
	}
}

func (w *writer) release(f *Fleet) {
	r := f.Release
	w.section("releases")
	w.comment("A release is one tested combination of the GPU software stack. This one is what runs now, on every cluster: the stable release. Add the next one beside it and roll it out with gpufleet start.")
	w.line("")
	w.line("[releases.%s]", key(r.Name))
	w.line("gpu-operator = %s", str(r.GPUOperator))
	if r.NetworkOperator != "" {
		w.line("network-operator = %s", str(r.NetworkOperator))
	}
	w.line("driver = %s", str(r.Driver))
	if r.Precompiled {
		w.line("precompiled = true")
	}
	w.line("notes = %s", str(releaseNotes(r)))
}

// releaseNotes says in words what the release is.
func releaseNotes(r Release) string {
	s := "What ran when gpufleet init read the fleet: GPU Operator " + r.GPUOperator
	if r.NetworkOperator != "" {
		s += ", Network Operator " + r.NetworkOperator
	} else {
		s += ", no Network Operator"
	}
	if r.Precompiled {
		return s + ", precompiled driver branch " + r.Driver + "."
	}
	return s + ", driver " + r.Driver + "."
}

func (w *writer) clusters(f *Fleet) {
	w.section("clusters")
	for _, c := range f.Clusters {
		w.line("")
		w.comment(clusterComment(c))
		w.line("[clusters.%s]", key(c.Name))
		w.line("environment = %s", str(c.Environment))
		w.line("context = %s", str(c.Context))
		for _, p := range c.Pools {
			w.line("")
			if text := poolComment(p); text != "" {
				w.comment(text)
			}
			w.line("[[clusters.%s.pools]]", key(c.Name))
			w.line("name = %s", str(p.Name))
			w.line("product = %s", str(p.Product))
			w.line("nodes = %d", len(p.Nodes))
			if p.MIG != "" {
				w.line("mig = %s", str(p.MIG))
			}
		}
		if op := c.GPUOperator; op != nil {
			w.line("")
			w.comment(fmt.Sprintf("The GPU Operator as Helm installed it (Deployment %s, chart %s from %s): render adopts this release rather than install a second one beside it.", op.Deployment, op.Version, versionSource(op)))
			w.line("[clusters.%s.gpu-operator]", key(c.Name))
			w.line("release = %s", str(op.Release))
			w.line("namespace = %s", str(op.Namespace))
			w.line("driver-management = %s", str(op.DriverManagement))
			w.values(op)
		}
		if op := c.NetworkOperator; op != nil {
			w.line("")
			w.comment(fmt.Sprintf("The Network Operator as Helm installed it (Deployment %s, chart %s from %s).", op.Deployment, op.Version, versionSource(op)))
			w.line("[clusters.%s.network-operator]", key(c.Name))
			w.line("release = %s", str(op.Release))
			w.line("namespace = %s", str(op.Namespace))
			w.values(op)
		}
	}
}

func versionSource(op *Install) string {
	if op.VersionFrom == VersionFromImage {
		return "its image tag"
	}
	return "its " + VersionFromChartLabel + " label"
}

func clusterComment(c *FleetCluster) string {
	s := fmt.Sprintf("%s: %s in %s", c.Name, plural(c.GPUNodes, "GPU node", "GPU nodes"), plural(len(c.Pools), "pool", "pools"))
	if op := c.GPUOperator; op != nil {
		switch op.DriverManagement {
		case DriverManagementClusterPolicy:
			s += fmt.Sprintf("; its ClusterPolicy (%s) manages the driver", op.ClusterPolicy)
		case DriverManagementNVIDIADriver:
			s += "; NVIDIADriver objects manage the driver"
		}
	}
	return s + "."
}

func poolComment(p *Pool) string {
	var parts []string
	if p.Labelled {
		parts = append(parts, fmt.Sprintf("Named by its nodes' %s label.", v1alpha1.LabelPool))
	}
	if p.MIG != "" {
		parts = append(parts, fmt.Sprintf("MIG layout %s (%s).", p.MIG, v1alpha1.LabelMIGConfig))
	}
	if p.DRA {
		parts = append(parts, fmt.Sprintf("Dynamic resource allocation hands its GPUs out (ResourceSlices of %s), not the device plugin.", v1alpha1.DRADriverGPU))
	}
	return strings.Join(parts, " ")
}

func (w *writer) waves(f *Fleet) {
	w.section("waves")
	w.comment("A release moves through the waves in order; gpufleet promote runs the gate before each step. Every wave but the first is entered only once approved (gpufleet approve RELEASE/WAVE), and a wave of two or more clusters gives the release to its canary cluster alone first, then waits for the same approval again.")
	for _, wv := range f.Waves {
		w.line("")
		w.line("[[waves]]")
		w.line("name = %s", str(wv.Name))
		w.line("clusters = %s", strList(wv.Clusters))
		if wv.Canary != "" {
			w.line("canary = %s", str(wv.Canary))
		}
		if wv.PauseAfterCanary {
			w.line("pause-after-canary = true")
		}
		if wv.RequireApproval {
			w.line("require-approval = true")
		}
	}
}

func (w *writer) policy(f *Fleet) {
	p := fleet.DefaultPolicy()
	w.section("policy")
	w.comment("How a driver rolls across one cluster's nodes. Conservative to begin with: one canary node that a person approves (gpufleet approve RELEASE/CLUSTER), then one node at a time, and the first failed node stops the rollout. Loosen it per environment once rollouts have gone well ([policy.environments.<env>]); maintenance windows are [[policy.windows]] tables (days, start, end, time-zone).")
	w.line("")
	w.line("[policy]")
	w.line("canary-nodes = %d", p.CanaryNodes)
	w.line("auto-approve-canary = %t", p.AutoApproveCanary)
	w.line("parallel-nodes = %d", p.ParallelNodes)
	w.line("max-unavailable = %s", amount(p.MaxUnavailable))
	w.line("soak = %s", str(duration(p.Soak)))
	w.line("failure-budget = %d", p.FailureBudget)
	w.line("drain-timeout = %s", str(duration(p.DrainTimeout)))
	w.line("install-timeout = %s", str(duration(p.InstallTimeout)))
	w.line("validate-timeout = %s", str(duration(p.ValidateTimeout)))
	first := true
	for _, c := range f.Clusters {
		if c.GPUOperator == nil || c.GPUOperator.DriverManagement != DriverManagementClusterPolicy {
			continue
		}
		w.line("")
		if first {
			w.comment("The clusters whose ClusterPolicy manages the driver (one driver DaemonSet for the cluster) keep it so: the GPU Operator's own upgrade controller moves their nodes, each one released by gpufleet under the policy above. Switching such a cluster to NVIDIADriver objects (driver-management = \"nvidiadriver\") would delete every driver pod at once on operators below v26.7.0.")
			first = false
		}
		w.line("[policy.clusters.%s]", key(c.Name))
		w.line("actuator = %s", str(string(v1alpha1.ActuatorGPUOperator)))
	}
}

func (w *writer) promotion(f *Fleet) {
	w.section("promotion")
	w.comment("Where the promotion stands. Edited by gpufleet's commands, one line each:\n  gpufleet start RELEASE   adds   rollout = { release = \"RELEASE\", wave = \"" + firstWave(f) + "\" }\n  gpufleet approve NAME    adds   NAME to approved")
	w.line("[promotion]")
	w.line("stable = %s", str(f.Release.Name))
	w.line("approved = []")
	w.line("paused = false")
}

func firstWave(f *Fleet) string {
	if len(f.Waves) == 0 {
		return ""
	}
	return f.Waves[0].Name
}

// amount is a max-unavailable as the fleet file writes it: a count, or a
// quoted percentage.
func amount(a fleet.Amount) string {
	if a.Percent {
		return str(a.String())
	}
	return strconv.Itoa(a.Value)
}

// duration is d as the fleet file writes it: 30m, 2h, 1h30m.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// values writes the release's own values as the YAML of a Helm values
// file (keys sorted, as helm get values prints them) in a multi-line
// string, with a comment that says where they come from and which keys
// were left to gpufleet.
func (w *writer) values(op *Install) {
	if len(op.Values) == 0 && len(op.ValuesDropped) == 0 {
		return
	}
	from := "read from its " + op.ValuesFrom
	if op.ValuesFrom == ValuesFromFlag {
		from = "given with " + ValuesFromFlag
	}
	text := fmt.Sprintf("The release's own values (%s, what helm get values prints): render installs the chart with gpufleet's merged over them, so they stay as they run.", from)
	if len(op.Values) == 0 {
		text = fmt.Sprintf("The release's own values (%s) hold none but keys gpufleet sets.", from)
	}
	if len(op.ValuesDropped) > 0 {
		text += fmt.Sprintf(" Left out, as gpufleet sets them from this file: %s.", strings.Join(op.ValuesDropped, ", "))
	}
	w.comment(text)
	if len(op.Values) == 0 {
		return
	}
	b, err := yaml.Marshal(op.Values)
	if err != nil {
		// Values decoded from JSON always encode. Were they not, a fleet
		// file without them would change what runs: say so in the file,
		// which the fleet parser then refuses.
		w.line("values = %s", str("cannot encode the release's values: "+err.Error()))
		return
	}
	w.line("values = %s", multiline(string(b)))
}

// multiline is text as a TOML multi-line string: a literal one, which
// reads as the YAML it holds, where TOML allows it (no three single
// quotes, no control character but tab and line breaks, no single quote
// at the end), else a basic one with escapes.
func multiline(text string) string {
	const lit, basic = "'''", `"""`
	if !strings.Contains(text, lit) && !strings.HasSuffix(text, "'") && strings.IndexFunc(text, func(r rune) bool {
		return r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f)
	}) < 0 {
		return lit + "\n" + text + lit
	}
	var b strings.Builder
	b.WriteString(basic + "\n")
	for _, r := range text {
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(basic)
	return b.String()
}
