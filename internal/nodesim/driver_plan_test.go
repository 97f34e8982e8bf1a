package nodesim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPlanDriver(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bad := func(v string) bool { return v == "999.0.1" }
	tests := []struct {
		name string
		want string
		pods []driverPod
		now  time.Time
		plan driverPlan
	}{
		{
			name: "no label",
			plan: driverPlan{reason: "node has no gpufleet.io/driver label: nothing to install"},
		},
		{
			name: "label flipped: old pod goes, new one starts",
			want: "580.95.05",
			pods: []driverPod{{name: "old", version: "570.172.08", ready: true}},
			plan: driverPlan{remove: []string{"old"}, create: true,
				reason: "driver 580.95.05 wanted and no pod installs it: start installing"},
		},
		{
			name: "still installing",
			want: "580.95.05",
			pods: []driverPod{{name: "new", version: "580.95.05", started: t0}},
			now:  t0.Add(2 * time.Second),
			plan: driverPlan{reason: "driver 580.95.05 installing"},
		},
		{
			name: "install time over",
			want: "580.95.05",
			pods: []driverPod{{name: "new", version: "580.95.05", started: t0}},
			now:  t0.Add(3 * time.Second),
			plan: driverPlan{complete: "new", reason: "driver 580.95.05 installed"},
		},
		{
			name: "bad version fails",
			want: "999.0.1",
			pods: []driverPod{{name: "new", version: "999.0.1", started: t0}},
			now:  t0.Add(time.Hour),
			plan: driverPlan{fail: "new", reason: "driver 999.0.1 is marked bad: install fails"},
		},
		{
			name: "failed stays failed",
			want: "999.0.1",
			pods: []driverPod{{name: "new", version: "999.0.1", started: t0, crashing: true}},
			now:  t0.Add(time.Hour),
			plan: driverPlan{reason: "driver 999.0.1 install already finished"},
		},
		{
			name: "duplicate pods of one version: keep the first",
			want: "580.95.05",
			pods: []driverPod{{name: "a", version: "580.95.05", ready: true}, {name: "b", version: "580.95.05"}},
			plan: driverPlan{remove: []string{"b"}, reason: "driver 580.95.05 install already finished"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planDriver(tt.want, tt.pods, tt.now, 3*time.Second, bad)
			if diff := cmp.Diff(tt.plan, got, cmp.AllowUnexported(driverPlan{})); diff != "" {
				t.Errorf("planDriver (-want +got):\n%s", diff)
			}
		})
	}
}
