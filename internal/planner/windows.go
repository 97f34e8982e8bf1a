package planner

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// Calendar says when nodes may start: inside a maintenance window (if there
// are any) and outside every freeze.
type Calendar struct {
	windows []window
	freezes []v1alpha1.FreezePeriod
	// broken holds a window that cannot be evaluated (an unknown time zone);
	// such a window never opens, which fails safe.
	broken []string
}

type window struct {
	days       [7]bool // indexed by time.Weekday
	start, end int     // minutes after midnight
	loc        *time.Location
	text       string
}

// NewCalendar compiles a spec's windows and freezes.
func NewCalendar(spec *v1alpha1.DriverRolloutSpec) Calendar {
	var c Calendar
	for _, w := range spec.Windows {
		cw, err := compileWindow(w)
		if err != nil {
			c.broken = append(c.broken, err.Error())
			continue
		}
		c.windows = append(c.windows, cw)
	}
	c.freezes = spec.Freezes
	return c
}

var dayIndex = map[v1alpha1.Weekday]time.Weekday{
	v1alpha1.Sunday: time.Sunday, v1alpha1.Monday: time.Monday, v1alpha1.Tuesday: time.Tuesday,
	v1alpha1.Wednesday: time.Wednesday, v1alpha1.Thursday: time.Thursday,
	v1alpha1.Friday: time.Friday, v1alpha1.Saturday: time.Saturday,
}

func compileWindow(w v1alpha1.MaintenanceWindow) (window, error) {
	out := window{text: windowText(w)}
	var err error
	if out.start, err = minutes(w.Start); err != nil {
		return out, fmt.Errorf("window %s: %w", out.text, err)
	}
	if out.end, err = minutes(w.End); err != nil {
		return out, fmt.Errorf("window %s: %w", out.text, err)
	}
	if out.loc, err = location(w.TimeZone); err != nil {
		return out, fmt.Errorf("window %s: %w", out.text, err)
	}
	if len(w.Days) == 0 {
		out.days = [7]bool{true, true, true, true, true, true, true}
	}
	for _, d := range w.Days {
		wd, ok := dayIndex[d]
		if !ok {
			return out, fmt.Errorf("window %s: unknown day %q", out.text, d)
		}
		out.days[wd] = true
	}
	return out, nil
}

func windowText(w v1alpha1.MaintenanceWindow) string {
	days := "daily"
	if len(w.Days) > 0 {
		days = fmt.Sprint(w.Days)
	}
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("%s %s-%s %s", days, w.Start, w.End, tz)
}

func minutes(hhmm string) (int, error) {
	var h, m int
	if _, err := fmt.Sscanf(hhmm, "%2d:%2d", &h, &m); err != nil || h > 23 || m > 59 || len(hhmm) != 5 {
		return 0, fmt.Errorf("time %q is not HH:MM", hhmm)
	}
	return h*60 + m, nil
}

// locations caches time zones: loading one reads the zone database, and the
// planner runs on every reconcile and every simulated step.
//
// Note: the planner does not depend on the machine's zone database: every
// binary that plans embeds time/tzdata (the controller in its main package,
// the CLI and the simulator through the fleet parser, which checks each
// window's zone when the policy is parsed), so a host or image without one
// plans the same windows.
var locations sync.Map

func location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", name, err)
	}
	locations.Store(name, l)
	return l, nil
}

// open reports whether w is open at t. A window whose end is before its
// start crosses midnight and belongs to the day it opens on: "Sat 22:00-06:00"
// is open from Saturday 22:00 to Sunday 06:00.
func (w window) open(t time.Time) bool {
	lt := t.In(w.loc)
	m := lt.Hour()*60 + lt.Minute()
	day := lt.Weekday()
	if w.start < w.end {
		return w.days[day] && m >= w.start && m < w.end
	}
	yesterday := (day + 6) % 7
	return (w.days[day] && m >= w.start) || (w.days[yesterday] && m < w.end)
}

// Allowed reports whether a node may start at t, and if not, why.
func (c Calendar) Allowed(t time.Time) (bool, string) {
	for _, f := range c.freezes {
		if !t.Before(f.Start.Time) && t.Before(f.End.Time) {
			why := fmt.Sprintf("freeze until %s", f.End.UTC().Format(time.RFC3339))
			if f.Reason != "" {
				why += " (" + f.Reason + ")"
			}
			return false, why
		}
	}
	if len(c.windows) == 0 && len(c.broken) == 0 {
		return true, ""
	}
	for _, w := range c.windows {
		if w.open(t) {
			return true, ""
		}
	}
	if len(c.windows) == 0 {
		return false, "no usable maintenance window: " + c.broken[0]
	}
	return false, "outside every maintenance window"
}

// NextAllowed returns the first time at or after t when a node may start,
// looking up to 15 days past the end of the freeze t is in (if any), and
// past the end of every freeze that begins in that horizon; zero if there
// is none in it.
// Candidates are t itself, every window opening and every freeze end: the
// answer is always one of them, since "allowed" only begins at those edges.
func (c Calendar) NextAllowed(t time.Time) time.Time {
	if ok, _ := c.Allowed(t); ok {
		return t
	}
	// A freeze ends when it says, however far away: wait for its end (and
	// that of any freeze it runs into); the horizon bounds only the search
	// for a window after it.
	t = c.afterFreezes(t)
	if ok, _ := c.Allowed(t); ok {
		return t
	}
	// Fifteen days, and fifteen past the end of any freeze that begins in
	// them: a window may be days away when the freeze ends (a year-end
	// freeze over a weekly window), and a search that stopped short would
	// find none and plan no next check at all.
	const look = 15 * 24 * time.Hour
	horizon := t.Add(look)
	for moved := true; moved; {
		moved = false
		for _, f := range c.freezes {
			if f.Start.Time.Before(horizon) && f.End.Time.After(t) && f.End.Time.Add(look).After(horizon) {
				horizon, moved = f.End.Time.Add(look), true
			}
		}
	}
	var cands []time.Time
	for _, f := range c.freezes {
		if e := f.End.Time; e.After(t) && e.Before(horizon) {
			cands = append(cands, e)
		}
	}
	days := int(horizon.Sub(t)/(24*time.Hour)) + 1
	for _, w := range c.windows {
		lt := t.In(w.loc)
		day0 := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, w.loc)
		for d := -1; d <= days; d++ {
			day := day0.AddDate(0, 0, d)
			if !w.days[day.Weekday()] {
				continue
			}
			o := time.Date(day.Year(), day.Month(), day.Day(), w.start/60, w.start%60, 0, 0, w.loc)
			if o.After(t) && o.Before(horizon) {
				cands = append(cands, o)
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Before(cands[j]) })
	for _, c2 := range cands {
		if ok, _ := c.Allowed(c2); ok {
			return c2
		}
	}
	return time.Time{}
}

// afterFreezes returns t, or the end of the freeze t is in, repeated while
// that end is inside another freeze.
func (c Calendar) afterFreezes(t time.Time) time.Time {
	for moved := true; moved; {
		moved = false
		for _, f := range c.freezes {
			if !t.Before(f.Start.Time) && t.Before(f.End.Time) {
				t, moved = f.End.Time, true
			}
		}
	}
	return t
}

// NextClose returns the first time after t when an open calendar closes (a
// window ends or a freeze begins), looking up to 15 days ahead; zero if none.
// The simulator uses it to land exactly on window edges.
func (c Calendar) NextClose(t time.Time) time.Time {
	var best time.Time
	consider := func(x time.Time) {
		if x.After(t) && (best.IsZero() || x.Before(best)) {
			best = x
		}
	}
	for _, f := range c.freezes {
		consider(f.Start.Time)
	}
	for _, w := range c.windows {
		lt := t.In(w.loc)
		day0 := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, w.loc)
		for d := -1; d <= 15; d++ {
			day := day0.AddDate(0, 0, d)
			if !w.days[day.Weekday()] {
				continue
			}
			end := time.Date(day.Year(), day.Month(), day.Day(), w.end/60, w.end%60, 0, 0, w.loc)
			if w.end < w.start {
				end = end.AddDate(0, 0, 1)
			}
			consider(end)
		}
	}
	return best
}
