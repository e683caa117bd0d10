package azuremonitor

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// ISODuration is d in ISO 8601, as the API takes `for`, `interval` and
// `timeToResolve`: PT10M, PT1H30M, P1DT2H; "" for 0 (no `for`).
func ISODuration(d model.Duration) string {
	t := time.Duration(d)
	if t <= 0 {
		return ""
	}
	days := t / (24 * time.Hour)
	t -= days * 24 * time.Hour
	out := "P"
	if days > 0 {
		out += strconv.FormatInt(int64(days), 10) + "D"
	}
	if t == 0 {
		return out
	}
	out += "T"
	for _, u := range []struct {
		d      time.Duration
		letter string
	}{{time.Hour, "H"}, {time.Minute, "M"}} {
		if n := t / u.d; n > 0 {
			out += strconv.FormatInt(int64(n), 10) + u.letter
			t -= n * u.d
		}
	}
	if t > 0 {
		out += strconv.FormatFloat(t.Seconds(), 'f', -1, 64) + "S"
	}
	return out
}

// isoDuration is the day-time subset of ISO 8601 durations Azure's
// templates use (no years or months, whose length varies).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// ParseISODuration reads an ISO 8601 day-time duration back, for the
// tests that run the Azure rules as Prometheus rules.
func ParseISODuration(s string) (model.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || s == "PT" || s[len(s)-1] == 'T' {
		return 0, fmt.Errorf("%q is not an ISO 8601 duration such as PT5M", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, _ := strconv.ParseInt(m[i+1], 10, 64)
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, _ := strconv.ParseFloat(m[4], 64)
		d += time.Duration(f * float64(time.Second))
	}
	return model.Duration(d), nil
}
