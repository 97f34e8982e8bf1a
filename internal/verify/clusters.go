package verify

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/render"
)

// CheckClusters is the check that what each cluster runs changes only
// through the promotion steps found: no edit of a release, a wave, the
// charts' source or anything else the clusters' GPU stack is rendered from
// moves a cluster by itself.
const CheckClusters = "clusters"

// The rule, and why it is judged on rendered files.
//
// What a cluster runs is what its GitOps engine applies: the files of its
// three steps and the objects that apply them (render.ClusterStacks). The
// promotion steps of a change run on the head's fleet file from the base's
// [promotion], so the head's fleet file in the base's promotion state
// must render every cluster exactly as the base does; whatever differs
// there changed by an edit, not by a step. Comparing rendered files rather
// than a list of fleet keys catches what no list names: a chart folder in
// the repository edited under the same version, a new field render writes.
//
// Two edits are allowed to change rendered files without a step, each
// judged alone by rendering the head with that part taken back from the
// base (fleet.Fleet.WithPartsOf):
//   - a cluster's pools (capacity; their nodes get the driver the cluster
//     runs);
//   - a cluster's policy while no rollout is under way there (its
//     DriverRollout rolls the driver it runs onto itself: nothing moves),
//     unless the actuator changes, which renames its NVIDIADrivers and
//     would restart every driver of the cluster at once.
//
// Rules and steps go in separate changes: a change that edits the waves or
// a cluster's policy takes no promotion step, so that every step runs
// under waves and a policy that were merged before it.

// clusters judges what each cluster runs; base is the base's fleet file
// (nil when it could not be read), onHead the head's fleet file in the
// base's promotion state (nil when that state does not hold there), and
// steps the promotion steps found (nil when none were).
func (v *run) clusters(base, onHead *fleet.Fleet, steps []gatedStep, baseOpts render.Options) {
	switch {
	case base == nil:
		v.rep.addCheck(CheckClusters, StatusUnknown, "the base's fleet file could not be read: what the clusters run was not compared")
		return
	case onHead == nil:
		v.rep.addCheck(CheckClusters, StatusFailed, "the base's promotion state does not hold on this fleet file (see promotion): what the clusters run cannot be compared")
		return
	}
	errs := 0
	fail := func(key, msg string) {
		errs++
		v.rep.add(Finding{Kind: CheckClusters, File: v.fleetPath, Line: v.at(key), Message: msg, Severity: SeverityError})
	}
	if len(steps) > 0 {
		if key := rulesEdited(base, v.head); key != "" {
			fail(key, fmt.Sprintf("%s is edited in a change that also takes promotion steps (%s): each step must run under waves and a policy merged before it; make the edit a change of its own", key, stepNames(steps)))
		}
	}
	var common []string
	for _, name := range v.head.ClusterNames() {
		switch {
		case base.Clusters[name] != nil:
			common = append(common, name)
		case onHead.Touched(name):
			r := onHead.Promotion.Rollout
			fail("clusters."+name, fmt.Sprintf("cluster %s is new and in wave %s, which %s has reached: it would get %s without its waves and gate; add it to a wave the rollout has not reached, or once %s is stable", name, onHead.Waves[onHead.WaveOf(name)].Name, r.Release, r.Release, r.Release))
		}
	}
	for _, name := range base.ClusterNames() {
		if v.head.Clusters[name] == nil {
			v.rep.add(Finding{Kind: CheckClusters, File: v.fleetPath, Message: fmt.Sprintf("cluster %s is removed from the fleet file: its folder goes, and its GitOps engine no longer finds what it applied (nothing on the cluster is removed)", name), Severity: SeverityWarning})
		}
	}
	was, err := render.ClusterStacks(base, common, baseOpts)
	if err != nil {
		v.rep.addCheck(CheckClusters, StatusUnknown, "could not render the base's fleet file: "+oneLine(err))
		return
	}
	var pools, policies []string
	for _, name := range common {
		if !reflect.DeepEqual(base.Clusters[name].Pools, onHead.Clusters[name].Pools) {
			pools = append(pools, name)
		}
		if atRest(base, onHead, name) && !actuatorChanged(base, onHead, name) && len(fleet.PolicyChanges(base, onHead, name)) > 0 {
			policies = append(policies, name)
		}
	}
	headOpts, err := v.renderOptions(onHead)
	if err != nil {
		v.rep.addCheck(CheckClusters, StatusUnknown, "could not render: "+oneLine(err))
		return
	}
	now, err := render.ClusterStacks(onHead.WithPartsOf(base, pools, policies), common, headOpts)
	if err != nil {
		v.rep.addCheck(CheckClusters, StatusUnknown, "could not render the fleet file: "+oneLine(err))
		return
	}
	moved := map[string][]string{} // a cause's finding → the clusters it moves
	var order []string
	for _, name := range common {
		if sameFiles(was[name], now[name]) {
			continue
		}
		for _, c := range causes(base, onHead, name, was[name], now[name]) {
			k := c.key + "\x00" + c.message
			if _, ok := moved[k]; !ok {
				order = append(order, k)
			}
			moved[k] = append(moved[k], name)
		}
	}
	for _, k := range order {
		key, msg, _ := strings.Cut(k, "\x00")
		fail(key, strings.ReplaceAll(msg, clustersPlaceholder, clusterList(moved[k])))
	}
	if errs > 0 {
		v.rep.addCheck(CheckClusters, StatusFailed, "the change moves clusters without a promotion step")
		return
	}
	summary := fmt.Sprintf("no cluster's GPU stack changes but by the promotion steps found (%d cluster(s) compared", len(common))
	if n := len(pools) + len(policies); n > 0 {
		summary += fmt.Sprintf("; pools changed on %d, a policy at rest on %d", len(pools), len(policies))
	}
	v.rep.addCheck(CheckClusters, StatusPassed, summary+")")
}

// renderOptions are what render needs for f (its charts), as the command
// line gives them.
func (v *run) renderOptions(f *fleet.Fleet) (render.Options, error) {
	if v.o.Render == nil {
		return render.Options{}, nil
	}
	return v.o.Render(f)
}

// rulesEdited is the first key of the waves or the policy that differs
// between a and b; empty when neither does. The policy counts where it
// applies: a setting that reaches no cluster of both is no rule edited.
func rulesEdited(a, b *fleet.Fleet) string {
	for i := range max(len(a.Waves), len(b.Waves)) {
		switch {
		case i >= len(b.Waves):
			return "waves"
		case i >= len(a.Waves):
			return fmt.Sprintf("waves[%d]", i)
		}
		x, y := reflect.ValueOf(*a.Waves[i]), reflect.ValueOf(*b.Waves[i])
		for j := range x.NumField() {
			if !reflect.DeepEqual(x.Field(j).Interface(), y.Field(j).Interface()) {
				return fmt.Sprintf("waves[%d].%s", i, x.Type().Field(j).Tag.Get("toml"))
			}
		}
	}
	for _, name := range b.ClusterNames() {
		if ch := fleet.PolicyChanges(a, b, name); len(ch) > 0 {
			return ch[0].Key
		}
	}
	return ""
}

func stepNames(steps []gatedStep) string {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.step.Summary
	}
	return strings.Join(names, "; ")
}

// atRest reports whether no rollout is under way on cluster in a nor in b
// (the same promotion state on two fleet files): its DriverRollout rolls
// the driver it runs onto itself, and a policy moves nothing there.
func atRest(a, b *fleet.Fleet, cluster string) bool {
	return !a.Touched(cluster) && !b.Touched(cluster)
}

func actuatorChanged(a, b *fleet.Fleet, cluster string) bool {
	return a.PolicyFor(cluster).Actuator != b.PolicyFor(cluster).Actuator
}

func sameFiles(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// clustersPlaceholder stands in a cause's message for the clusters it
// moves, filled in once every cluster is judged.
const clustersPlaceholder = "\x01clusters\x01"

func clusterList(names []string) string {
	const most = 5
	s := fmt.Sprintf("%d cluster(s) (%s", len(names), strings.Join(names[:min(most, len(names))], ", "))
	if len(names) > most {
		s += ", …"
	}
	return s + ")"
}

// cause is one reason a cluster's rendered stack changed: the fleet file
// key that caused it and what to say.
type cause struct {
	key, message string
}

// causes names what changed cluster's rendered stack from was to now,
// reading the two fleet files (a the base's, b the head's in the same
// promotion state). A change it cannot name (a chart folder edited in
// place) is said with the first file that differs.
func causes(a, b *fleet.Fleet, cluster string, was, now map[string][]byte) []cause {
	var out []cause
	add := func(key, format string, args ...any) {
		out = append(out, cause{key: key, message: fmt.Sprintf(format, args...)})
	}
	ca, cb := a.Clusters[cluster], b.Clusters[cluster]
	ra, rb := a.ReleaseFor(cluster), b.ReleaseFor(cluster)
	if ra.Name != rb.Name || a.Touched(cluster) != b.Touched(cluster) {
		key := "clusters." + cluster
		if wi := b.WaveOf(cluster); wi >= 0 {
			key = fmt.Sprintf("waves[%d].clusters", wi)
		}
		add(key, "cluster %s moves to release %s (it runs %s) because the waves changed: the waves move a cluster only through `gpufleet promote`, behind the gate", cluster, rb.Name, ra.Name)
		return out
	}
	// The releases the cluster's folder is rendered from: what it runs,
	// what its DriverRollout rolls out and back to.
	releases := []string{ra.Name, a.Promotion.Stable}
	if a.Touched(cluster) {
		releases = append(releases, a.Promotion.Rollout.Release)
	}
	slices.Sort(releases)
	for _, name := range slices.Compact(releases) {
		x, y := a.Releases[name], b.Releases[name]
		if x == nil || y == nil {
			continue
		}
		for _, f := range releaseFields(x, y) {
			add("releases."+name+"."+f.key, "releases.%s.%s changed (%s → %s) while %s runs on %s: make it a new release and promote it", name, f.key, f.was, f.now, name, clustersPlaceholder)
		}
	}
	if a.Charts != b.Charts {
		add("charts.repository", "[charts] changed (%s %s → %s %s): every cluster's operators would come from there at once, with no wave or gate", a.Charts.Mode, a.Charts.Repository, b.Charts.Mode, b.Charts.Repository)
	}
	if a.Controller != b.Controller {
		add("controller.image", "controller.image changed (%s → %s): every cluster would run that controller at once, with no wave or gate; a new controller is a new release's version, promoted", a.Controller.Image, b.Controller.Image)
	}
	if x, y := a.EngineFor(cluster), b.EngineFor(cluster); x != y {
		add("gitops", "cluster %s moves from %s to %s: a change of GitOps engine is not a promotion step", cluster, x, y)
	}
	if a.GitOps.Repository != b.GitOps.Repository || a.GitOps.Branch != b.GitOps.Branch {
		add("gitops.repository", "[gitops] repository or branch changed: the clusters would apply another source at once")
	}
	for _, f := range clusterFields(ca, cb) {
		add("clusters."+cluster+"."+f, "clusters.%s.%s changed: it changes what %s runs, and no promotion step moves it", cluster, f, cluster)
	}
	if actuatorChanged(a, b, cluster) {
		add(b.PolicyKey(cluster, "actuator"), "the actuator of cluster %s changes (%s → %s): its NVIDIADrivers are renamed, which restarts every driver of the cluster at once", cluster, a.PolicyFor(cluster).Actuator, b.PolicyFor(cluster).Actuator)
	} else if ch := fleet.PolicyChanges(a, b, cluster); len(ch) > 0 && (a.Touched(cluster) || b.Touched(cluster)) {
		var what []string
		for _, c := range ch {
			what = append(what, fmt.Sprintf("%s %s → %s", c.Field, c.Was, c.Now))
		}
		add(ch[0].Key, "the policy of cluster %s changes (%s) while %s rolls out there: pause it with `gpufleet pause`, and change the policy once the rollout is stable or its abort has ended", cluster, strings.Join(what, ", "), a.Promotion.Rollout.Release)
	}
	if len(out) == 0 {
		add("charts.repository", "what cluster %s runs changes (%s) though nothing it is rendered from in the fleet file did: the charts it renders from changed under the same version", cluster, firstDiff(was, now))
	}
	return out
}

// fieldChange is one field of a release or cluster that differs.
type fieldChange struct{ key, was, now string }

// releaseFields lists the fields of a release that change what runs (all
// but its notes), by their fleet file keys.
func releaseFields(x, y *fleet.Release) []fieldChange {
	var out []fieldChange
	vx, vy := reflect.ValueOf(*x), reflect.ValueOf(*y)
	for i := range vx.NumField() {
		f := vx.Type().Field(i)
		key := f.Tag.Get("toml")
		if key == "" || key == "-" || key == "notes" {
			continue
		}
		if a, b := vx.Field(i).Interface(), vy.Field(i).Interface(); !reflect.DeepEqual(a, b) {
			out = append(out, fieldChange{key: key, was: orNone(fmt.Sprint(a)), now: orNone(fmt.Sprint(b))})
		}
	}
	return out
}

// clusterFields lists the fields of a cluster, besides its pools and
// kubeconfig context (which render does not read), that differ.
func clusterFields(x, y *fleet.Cluster) []string {
	var out []string
	vx, vy := reflect.ValueOf(*x), reflect.ValueOf(*y)
	for i := range vx.NumField() {
		f := vx.Type().Field(i)
		key := f.Tag.Get("toml")
		if key == "" || key == "-" || key == "pools" || key == "context" {
			continue
		}
		if !reflect.DeepEqual(vx.Field(i).Interface(), vy.Field(i).Interface()) {
			out = append(out, key)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// firstDiff names the first file, by path, that differs between two
// renders of a cluster's stack.
func firstDiff(was, now map[string][]byte) string {
	paths := slices.Sorted(maps.Keys(was))
	for p := range now {
		if _, ok := was[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		if !bytes.Equal(was[p], now[p]) {
			return p
		}
	}
	return "no file"
}
