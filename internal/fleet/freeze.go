package fleet

import (
	"fmt"
	"time"
)

// The time zones BurntSushi/toml gives a TOML local date-time, date and
// time of day, which have no offset of their own: their names are how a
// decoded value says which it was.
const (
	tomlLocalDateTime = "datetime-local"
	tomlLocalDate     = "date-local"
	tomlLocalTime     = "time-local"
)

// parseFreeze turns a [[policy.freezes]] entry into an instant-to-instant
// period, or says what is wrong with it.
//
// A freeze must name instants, not wall-clock readings: TOML's local
// date-time (2026-12-21T00:00:00, no offset) means "midnight wherever the
// file is read", so the same fleet file would freeze at different instants
// on a laptop in Berlin and in CI in UTC, and render --check would disagree
// between them. So each of start and end is either an offset date-time
// (2026-12-21T00:00:00Z, 2026-12-21T00:00:00+01:00), or a local date-time
// read in the freeze's own time-zone; never in the machine's.
func parseFreeze(fr rawFreeze) (Freeze, []fieldError) {
	var errs []fieldError
	var loc *time.Location
	if fr.TimeZone != "" {
		l, err := time.LoadLocation(fr.TimeZone)
		if err != nil || fr.TimeZone == "Local" {
			errs = append(errs, fieldError{"time-zone", fmt.Sprintf("unknown time zone %q: use an IANA name such as UTC or Europe/Berlin", fr.TimeZone)})
		} else {
			loc = l
		}
	}
	start, startErr := freezeInstant("start", fr.Start, fr.TimeZone, loc)
	end, endErr := freezeInstant("end", fr.End, fr.TimeZone, loc)
	for _, e := range []*fieldError{startErr, endErr} {
		if e != nil {
			errs = append(errs, *e)
		}
	}
	if len(errs) > 0 {
		return Freeze{}, errs
	}
	if !end.After(start) {
		return Freeze{}, []fieldError{{"end", fmt.Sprintf("end %s is not after start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))}}
	}
	return Freeze{Start: start, End: end, Reason: fr.Reason}, nil
}

// freezeInstant reads one bound of a freeze (see parseFreeze) as a UTC
// instant. loc is the freeze's time-zone (nil when it has none, or when it
// is invalid, which is reported already; zone is its name for messages).
func freezeInstant(field string, v any, zone string, loc *time.Location) (time.Time, *fieldError) {
	fail := func(format string, args ...any) (time.Time, *fieldError) {
		return time.Time{}, &fieldError{field, fmt.Sprintf(format, args...)}
	}
	switch x := v.(type) {
	case nil:
		return fail("%s is required: a date-time with an offset, e.g. 2026-12-21T00:00:00Z", field)
	case time.Time:
		switch x.Location().String() {
		case tomlLocalDateTime:
			local := x.Format("2006-01-02T15:04:05")
			switch {
			case zone == "":
				return fail("%s %s has no offset, so each machine would read it in its own time zone: add one (%sZ or %s+01:00) or set time-zone, e.g. time-zone = \"Europe/Berlin\"", field, local, local, local)
			case loc == nil:
				return time.Time{}, nil // the bad time-zone is reported
			}
			return time.Date(x.Year(), x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), loc).UTC(), nil
		case tomlLocalDate:
			d := x.Format("2006-01-02")
			return fail("%s %s is a date: a freeze needs a date-time with an offset, e.g. %sT00:00:00Z", field, d, d)
		case tomlLocalTime:
			tod := x.Format("15:04:05")
			return fail("%s %s is a time of day: a freeze needs a date-time with an offset, e.g. 2026-12-21T%sZ", field, tod, tod)
		}
		if zone != "" {
			return fail("%s %s has its own offset and the freeze sets time-zone %q: write a local date-time (%s) or drop time-zone", field, x.Format(time.RFC3339), zone, x.Format("2006-01-02T15:04:05"))
		}
		return x.UTC(), nil
	case string:
		return fail("%s is a string: write the date-time without quotes, e.g. %s = 2026-12-21T00:00:00Z", field, field)
	default:
		return fail("%s must be a date-time with an offset, e.g. 2026-12-21T00:00:00Z", field)
	}
}

// joinField appends a field name to a key prefix ("freezes[0]" + "end").
func joinField(key, field string) string {
	if field == "" {
		return key
	}
	return key + "." + field
}
