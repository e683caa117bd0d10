package loki

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/winobs/winobs/contract"
)

// Report says what became of the entries given to Send, per owner (an
// entry's Owner, else its stream's labels): stored (a 204 answered a
// request holding them), or dropped with a reason; how many of the stored
// ones went with another timestamp than the one they were given, and why;
// and, per stream, the oldest time Loki said it takes (its newest entry
// minus max_chunk_age/2), so the next batches can be made to fit before
// they are sent.
type Report struct {
	Stored    map[string]int
	Dropped   map[string]map[string]int
	Restamped map[string]map[string]int
	Floors    map[string]time.Time
	// Presumed counts, per stream, entries Loki refused as too far behind
	// or too old that an earlier request may have stored: counted among
	// Stored, neither re-stamped (a second copy) nor dropped.
	Presumed map[string]int
	// Held counts, per stream, replayed entries Loki answered it holds
	// already (Client.dropHeld): counted among Stored, not sent again.
	Held map[string]int
}

func newReport() Report {
	return Report{Stored: map[string]int{}, Dropped: map[string]map[string]int{},
		Restamped: map[string]map[string]int{}, Floors: map[string]time.Time{}, Presumed: map[string]int{}, Held: map[string]int{}}
}

func (r *Report) drop(stream, reason string, n int) { bump(r.Dropped, stream, reason, n) }

func bump(m map[string]map[string]int, stream, reason string, n int) {
	if n <= 0 {
		return
	}
	if m[stream] == nil {
		m[stream] = map[string]int{}
	}
	m[stream][reason] += n
}

// Loki's per-entry rejections (pkg/validation, pkg/ingester), one per line,
// matched the way Loki has worded them across releases: any case,
// timestamps in RFC 3339 or Go's time.Time format, and the stream as Loki
// names it (with labels of its own such as service_name).
const lokiTime = `(\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z| [+-]\d{4} \w+)?)`

var (
	reTooLong = regexp.MustCompile(`(?i)max entry size '(\d+)' bytes exceeded for stream '(\{.*?\})' while adding an entry with length '(\d+)' bytes`)
	reTooOld  = regexp.MustCompile(`(?i)entry for stream '(\{.*?\})' has timestamp too (old|new): ` + lokiTime + `(?:, oldest acceptable timestamp is: ` + lokiTime + `)?`)
	// The ingester names at most ten ignored entries per stream, one a line,
	// then gives the total and the stream.
	reIgnored = regexp.MustCompile(`(?i)entry with timestamp ` + lokiTime + ` ignored, reason: 'entry too far behind[^']*?(?:oldest acceptable timestamp is: ` + lokiTime + `)?'`)
	reTotal   = regexp.MustCompile(`(?i)total ignored: (\d+) out of (\d+) for stream: (\{.*\})`)
	// The distributor refuses a stream whole for its labels.
	reRefused = regexp.MustCompile(`(?i)^(?:entry for )?stream '(\{.*?\})' has (?:label (?:name|value) too long|\d+ label names)`)
)

// restampMargin puts a too-old entry this far inside the oldest time Loki
// said it accepts, so the resend is not too old again by the time it lands.
const restampMargin = time.Hour

// BehindMargin puts a too-far-behind entry this far above the oldest time
// Loki said the stream accepts: the stream's newest entry, and with it that
// time, moves on while the batch is repaired.
const BehindMargin = 5 * time.Minute

// parseLokiTime reads a timestamp as Loki prints it; second precision when
// it is RFC 3339 without fraction.
func parseLokiTime(s string) (t time.Time, precision time.Duration, ok bool) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999 -0700 MST", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			if !strings.Contains(s, ".") {
				return t, time.Second, true
			}
			return t, time.Nanosecond, true
		}
	}
	return time.Time{}, 0, false
}

// fault is what Loki said of one entry.
type fault uint8

const (
	unnamed fault = iota // nothing: stored, or still to be confirmed
	tooLong              // over max_line_size: truncate
	tooOld               // older than reject_old_samples_max_age: re-stamp
	tooNew               // beyond creation_grace_period: re-stamp
	behind               // too far behind the stream's newest: re-stamp
	refused              // the stream's labels: cannot be repaired
)

var dropReasons = [...]string{unnamed: contract.DropUnconfirmed, tooLong: contract.DropTooLarge, tooOld: contract.DropTooOld, tooNew: contract.DropTooNew,
	behind: contract.DropTooFarBehind, refused: contract.DropStreamRefused}

// mark is a fault and how to repair it.
type mark struct {
	fault fault
	limit int       // tooLong: the line size Loki takes
	at    time.Time // re-stamps: the new time (zero: now)
	// aboveFloor: unnamed, and at or above the too-far-behind floor the
	// answer gave, so it was stored unless the distributor refused it.
	aboveFloor bool
}

// ignored is one ingester block: the entries it named, its total, and the
// number of the stream's entries that reached the ingester.
type ignored struct {
	named    []time.Time
	floors   []time.Time // the oldest acceptable time each named entry was given
	n, total int
	sharded  bool // of a shard: which of our entries it got is Loki's secret
}

// verdict is a 400 read against the request it answered, which holds one
// stream (Send).
type verdict struct {
	marks []mark // per entry
	// proven: Loki's answer was attributed entry by entry, so the unnamed
	// entries are stored. Either the ingester refused some entries, and its
	// answer (which then hides the distributor's) says how many of how many
	// reached it, or the ingester took every entry that reached it and the
	// answer is the distributor's refusals alone.
	proven       bool
	unattributed int       // lines that name nothing of this stream
	floor        time.Time // the oldest time the stream's ingester takes
	now          time.Time
}

// streamIndex knows a stream by the labels Loki names it with (without the
// labels Loki adds: service_name, __stream_shard__) and its entries by
// time, so reading an answer is linear in the answer and the stream.
type streamIndex struct {
	s      Stream
	key    string
	byTime []int // entry indexes sorted by time (built on demand)
	cache  map[string]bool
}

func newStreamIndex(s Stream) *streamIndex {
	return &streamIndex{s: s, key: FormatLabels(ParseLabels(s.Labels)), cache: map[string]bool{}}
}

// names reports whether Loki named this stream; sharded reports a shard of it.
func (ix *streamIndex) names(named string) (ours, sharded bool) {
	sharded = strings.Contains(named, "__stream_shard__")
	if ours, ok := ix.cache[named]; ok {
		return ours, sharded
	}
	m := ParseLabels(named)
	delete(m, "__stream_shard__")
	ours = FormatLabels(m) == ix.key
	if !ours {
		delete(m, "service_name")
		ours = FormatLabels(m) == ix.key
	}
	ix.cache[named] = ours
	return ours, sharded
}

// sorted is the entry indexes by time.
func (ix *streamIndex) sorted() []int {
	if ix.byTime == nil {
		es := ix.s.Entries
		order := make([]int, len(es))
		for k := range order {
			order[k] = k
		}
		sort.SliceStable(order, func(a, b int) bool { return es[order[a]].Time.Before(es[order[b]].Time) })
		ix.byTime = order
	}
	return ix.byTime
}

// inRange calls fn with every entry timed in [from, to).
func (ix *streamIndex) inRange(from, to time.Time, fn func(k int)) {
	es, order := ix.s.Entries, ix.sorted()
	for p := sort.Search(len(order), func(p int) bool { return !es[order[p]].Time.Before(from) }); p < len(order) && es[order[p]].Time.Before(to); p++ {
		fn(order[p])
	}
}

// judge reads Loki's 400 body against the stream it answered.
func judge(s Stream, body string, now time.Time) *verdict {
	rd := &reader{ix: newStreamIndex(s), v: &verdict{marks: make([]mark, len(s.Entries)), now: now}}
	for _, l := range refusals(body) {
		// Cheap tests first: an expression runs only on lines it can match.
		switch {
		case l == "":
		case strings.Contains(l, "gnored") && rd.ingester(l):
		case strings.Contains(l, "label") && rd.refused(l):
		case strings.Contains(l, "ntry size") && rd.tooLong(l):
		case strings.Contains(l, "timestamp too") && rd.tooOld(l):
		default:
			rd.v.unattributed++
		}
	}
	v := rd.v
	v.unattributed += len(rd.pending.named) // named entries without their block's total
	if len(rd.blocks) > 0 {
		v.proven = v.attribute(rd.ix, rd.blocks) && !rd.distributor
	} else {
		v.proven = rd.distributor && v.unattributed == 0 // the distributor's words: the ingester took the rest
	}
	return v
}

// refusals splits Loki's answer into its refusals. The ingester writes
// one a line (an ignored-entries block is several). The distributor writes
// one refusal as it is, but more than one as a single line of groups,
// "N errors like: <refusal>; M errors like: <refusal>", each distinct
// refusal once, in Go's map order (pkg/util/errors.go, GroupedErrors; the
// counts are not needed: a refusal names its entries by time or size). A
// group starts only outside the double quotes of the label values Loki
// quotes, so a label value cannot forge one.
func refusals(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n := groupPrefix(line)
		if n == 0 {
			out = append(out, line)
			continue
		}
		start, quoted := n, false
		for i := n; i < len(line); i++ {
			switch c := line[i]; {
			case c == '\\' && quoted:
				i++ // an escaped character, perhaps a quote
			case c == '"':
				quoted = !quoted
			case c == ';' && !quoted && strings.HasPrefix(line[i:], "; "):
				if m := groupPrefix(line[i+2:]); m > 0 {
					out = append(out, line[start:i])
					start, i = i+2+m, i+2+m-1
				}
			}
		}
		out = append(out, line[start:])
	}
	return out
}

// groupPrefix is the length of a leading "N errors like: ", or 0.
func groupPrefix(s string) int {
	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	const like = " errors like: "
	if digits == 0 || !strings.HasPrefix(s[digits:], like) {
		return 0
	}
	return digits + len(like)
}

// reader holds what judge has read so far.
type reader struct {
	ix          *streamIndex
	v           *verdict
	blocks      []ignored // the ingester's blocks
	pending     ignored   // named entries waiting for their block's total
	distributor bool      // a distributor's refusal was read (Loki never writes one beside an ingester's: both prove nothing)
}

func (rd *reader) set(k int, m mark) {
	if rd.v.marks[k].fault == unnamed || m.fault == refused {
		rd.v.marks[k] = m
	}
}

// ingester reads a named ignored entry and/or a block's total.
func (rd *reader) ingester(l string) bool {
	matched := false
	if m := reIgnored.FindStringSubmatch(l); m != nil {
		if t, _, ok := parseLokiTime(m[1]); ok {
			floor, _, _ := parseLokiTime(m[2])
			rd.pending.named, rd.pending.floors = append(rd.pending.named, t), append(rd.pending.floors, floor)
			matched = true
		}
	}
	if m := reTotal.FindStringSubmatch(l); m != nil {
		matched = true
		ours, sharded := rd.ix.names(m[3])
		rd.pending.n, _ = strconv.Atoi(m[1])
		rd.pending.total, _ = strconv.Atoi(m[2])
		rd.pending.sharded = sharded
		if ours {
			rd.blocks = append(rd.blocks, rd.pending)
		} else {
			rd.v.unattributed++
		}
		rd.pending = ignored{}
	}
	return matched
}

// distributorLine matches a distributor's rejection naming the stream (in
// submatch group): the submatches.
func (rd *reader) distributorLine(re *regexp.Regexp, l string, group int) ([]string, bool) {
	m := re.FindStringSubmatch(l)
	if m == nil {
		return nil, false
	}
	if ours, _ := rd.ix.names(m[group]); !ours {
		return nil, false
	}
	rd.distributor = true
	return m, true
}

// refused reads the stream refused whole for its labels.
func (rd *reader) refused(l string) bool {
	if _, ok := rd.distributorLine(reRefused, l, 1); !ok {
		return false
	}
	for k := range rd.ix.s.Entries {
		rd.set(k, mark{fault: refused})
	}
	return true
}

// tooLong reads a line over max_line_size: every longer line of the stream.
func (rd *reader) tooLong(l string) bool {
	m, ok := rd.distributorLine(reTooLong, l, 2)
	if !ok {
		return false
	}
	limit, _ := strconv.Atoi(m[1])
	for k, e := range rd.ix.s.Entries {
		if len(e.Line) > limit {
			rd.set(k, mark{fault: tooLong, limit: limit})
		}
	}
	return true
}

// tooOld reads an entry too old or too new: every entry of the stream in
// the second (or nanosecond) Loki named.
func (rd *reader) tooOld(l string) bool {
	m, ok := rd.distributorLine(reTooOld, l, 1)
	if !ok {
		return false
	}
	t, prec, ok := parseLokiTime(m[3])
	if !ok {
		return false
	}
	mk := mark{fault: tooNew}
	if strings.EqualFold(m[2], "old") {
		mk.fault = tooOld
		if oldest, _, ok := parseLokiTime(m[4]); ok {
			mk.at = oldest.Add(restampMargin)
		}
	}
	rd.ix.inRange(t, t.Add(prec), func(k int) { rd.set(k, mk) })
	return true
}

// attribute marks the entries the ingester ignored. Loki
// names at most ten and gives the total; for one writer's stream the
// ignored entries are those older than one floor (the stream's newest entry
// minus max_chunk_age/2, fixed for the request when the batch keeps within
// it), so they are the total's count of oldest entries. That is checked
// against everything Loki said: the count of entries that reached the
// ingester, every named time among them, the next entry not older than any
// floor named, no tie across the boundary. When the check fails, only the
// named entries are marked and false says the others are unproven.
func (v *verdict) attribute(ix *streamIndex, blocks []ignored) bool {
	es := ix.s.Entries
	var n, total int
	var named []time.Time
	var floorMin, floorMax time.Time
	sharded := false
	for _, b := range blocks {
		n, total, sharded = n+b.n, total+b.total, sharded || b.sharded
		named = append(named, b.named...)
		for _, f := range b.floors {
			if f.IsZero() {
				continue
			}
			if floorMin.IsZero() || f.Before(floorMin) {
				floorMin = f
			}
			if f.After(floorMax) {
				floorMax = f
			}
		}
	}
	at := floorMax.Add(BehindMargin)
	if floorMax.After(v.floor) {
		v.floor = floorMax
	}
	reached, order := 0, ix.sorted()
	var eligible []int // in time order: the entries the distributor let through
	for _, k := range order {
		if v.marks[k].fault == unnamed {
			eligible = append(eligible, k)
			reached++
		}
	}
	consistent := !sharded && n > 0 && n <= len(eligible) && total == reached && !floorMax.IsZero()
	if consistent {
		last := es[eligible[n-1]].Time
		oldest := map[int64]int{}
		for _, k := range eligible[:n] {
			oldest[es[k].Time.UnixNano()]++
		}
		for _, t := range named {
			consistent = consistent && oldest[t.UnixNano()] > 0 && !t.After(last)
		}
		consistent = consistent && last.Before(floorMax.Add(time.Second))
		if n < len(eligible) {
			next := es[eligible[n]].Time
			consistent = consistent && next.After(last) && !next.Before(floorMin)
		}
	}
	if !consistent && !sharded && !floorMin.IsZero() && floorMin.Equal(floorMax) {
		// One floor for the request (its entries in time order): every
		// entry under it was ignored or refused, every entry above it was
		// stored unless the distributor refused it, which an ingester's
		// answer hides (Loki's total then counts fewer entries than were
		// sent). Loki prints the floor to the second: the entries of that
		// second are re-stamped too, a possible second copy rather than a
		// possible loss.
		edge := floorMax.Add(time.Second)
		fits := true
		for _, t := range named {
			fits = fits && t.Before(edge)
		}
		if fits {
			rank := 0
			for _, k := range eligible {
				if es[k].Time.Before(edge) {
					v.marks[k] = mark{fault: behind, at: at.Add(time.Duration(rank))}
					rank++
					continue
				}
				v.marks[k].aboveFloor = true
			}
			return false
		}
	}
	if !consistent {
		names := map[int64]bool{}
		for _, t := range named {
			names[t.UnixNano()] = true
		}
		rank := 0
		for _, k := range eligible {
			if names[es[k].Time.UnixNano()] {
				v.marks[k] = mark{fault: behind, at: at.Add(time.Duration(rank))}
				rank++
			}
		}
		return false
	}
	// Re-stamped a nanosecond apart, in their order of time.
	for rank, k := range eligible[:n] {
		v.marks[k] = mark{fault: behind, at: at.Add(time.Duration(rank))}
	}
	return true
}

// work is a stream on its way: its entries, and per entry why its
// timestamp was changed ("" for not at all).
type work struct {
	Stream
	why []string
}

func newWork(s Stream) work { return work{Stream: s, why: make([]string, len(s.Entries))} }

// repair applies the verdict: over-long lines truncated with the marker,
// too-old, too-new and too-far-behind entries re-stamped (the line, with
// timeCreated, unchanged), entries of refused streams dropped. The rest go
// again as they are: Loki drops the stored ones as identical. progress is
// false when nothing changed, so sending again cannot help.
func (v *verdict) repair(w work, rep *Report) (next work, progress bool) {
	if v.floor.After(rep.Floors[w.Labels]) {
		rep.Floors[w.Labels] = v.floor
	}
	next = work{Stream: Stream{Labels: w.Labels, Entries: make([]Entry, 0, len(w.Entries))}, why: make([]string, 0, len(w.Entries))}
	own := v.ownNewest(w.Stream) // once: it reads all of the entries
	for k, e := range w.Entries {
		m, reason := v.marks[k], w.why[k]
		switch {
		case m.fault == unnamed && v.proven:
			// Loki accounted for the stream entry by entry: stored.
			// Resent, it could be "too far behind" the entries stored
			// with it, which Loki says before it drops a duplicate.
			rep.stored(w.owner(e), reason)
			progress = true
			continue
		case m.fault == unnamed:
			e.MaybeStored = true
			e.aboveFloor = e.aboveFloor || m.aboveFloor
		case m.fault == behind && (e.aboveFloor || e.MaybeStored && own):
			// Stored by an earlier request: it reached the ingester
			// above its floor before (what the distributor refuses it
			// refuses again, and then no ingester names it), or the
			// stream's newest entry in Loki is its own batch's.
			rep.stored(w.owner(e), reason)
			rep.Presumed[w.owner(e)]++
			progress = true
			continue
		}
		switch m.fault {
		case refused:
			rep.drop(w.owner(e), contract.DropStreamRefused, 1)
			progress = true
			continue
		case tooLong:
			if len(e.Line) > m.limit {
				e = e.changed(e.Time, Truncate(e.Line, m.limit))
				progress = true
			}
		case tooOld, tooNew, behind:
			ts := m.at
			if ts.IsZero() || ts.After(v.now) {
				ts = v.now
			}
			if !ts.Equal(e.Time) {
				e = e.changed(ts, e.Line)
				reason = [...]string{tooOld: contract.RestampTooOld, tooNew: contract.RestampTooNew, behind: contract.RestampTooFarBehind}[m.fault]
				progress = true
			}
		}
		next.Entries = append(next.Entries, e)
		next.why = append(next.why, reason)
	}
	return next, progress
}

// presumeMargin is less than any cutoff Loki's too-far-behind check uses
// (max_chunk_age/2: 1h by default, and max_chunk_age is hours in practice).
const presumeMargin = 30 * time.Minute

// ownNewest reports whether the stream's newest entry in Loki (the floor Loki
// named plus its cutoff) is explained by entries of this batch that an
// earlier request may have stored: then an entry of theirs "too far behind"
// was stored with them, and re-stamping it would store it twice. A newer
// entry from another writer (a live agent ahead of a backfill) leaves the
// floor above them: those entries were ignored, never stored, and are
// re-stamped into the window.
func (v *verdict) ownNewest(s Stream) bool {
	floor := v.floor
	if floor.IsZero() {
		return false
	}
	var newest time.Time
	for _, e := range s.Entries {
		if !e.MaybeStored {
			continue
		}
		for _, t := range []time.Time{e.Time, e.StoredUpTo} {
			if t.After(newest) {
				newest = t
			}
		}
	}
	return !floor.After(newest.Add(-presumeMargin))
}

// giveUp ends a batch Loki keeps refusing: each named entry is dropped with
// its reason; the unnamed ones are stored where Loki's answer accounted for
// every entry, and dropped as unconfirmed otherwise.
func (v *verdict) giveUp(w work, rep *Report) {
	for k, e := range w.Entries {
		if f := v.marks[k].fault; f != unnamed || !v.proven {
			rep.drop(w.owner(e), dropReasons[f], 1)
			continue
		}
		rep.stored(w.owner(e), w.why[k])
	}
}

// stored counts one entry Loki holds, and its re-stamp reason if any.
func (r *Report) stored(owner, why string) {
	r.Stored[owner]++
	if why != "" {
		bump(r.Restamped, owner, why, 1)
	}
}

// changed is e with another time or line: a new entry, which no earlier
// request stored (what Loki knew of e does not carry over); its metadata
// and owner stay.
func (e Entry) changed(at time.Time, line []byte) Entry {
	return Entry{Time: at, Line: line, Metadata: e.Metadata, Owner: e.Owner}
}

// owner is what the Report counts an entry of s under.
func (s Stream) owner(e Entry) string {
	if e.Owner != "" {
		return e.Owner
	}
	return s.Labels
}

// add counts o's entries in r too; a stream's floor is the later of both.
func (r *Report) add(o Report) {
	for s, n := range o.Stored {
		r.Stored[s] += n
	}
	for s, n := range o.Presumed {
		r.Presumed[s] += n
	}
	for s, n := range o.Held {
		r.Held[s] += n
	}
	for s, m := range o.Dropped {
		for why, n := range m {
			bump(r.Dropped, s, why, n)
		}
	}
	for s, m := range o.Restamped {
		for why, n := range m {
			bump(r.Restamped, s, why, n)
		}
	}
	for s, f := range o.Floors {
		if f.After(r.Floors[s]) {
			r.Floors[s] = f
		}
	}
}

// delivered counts every entry of a request Loki answered 204.
func (r *Report) delivered(w work) {
	for k, e := range w.Entries {
		r.stored(w.owner(e), w.why[k])
	}
}
