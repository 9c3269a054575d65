package embedded

import "time"

// commitHold decides how long the committer holds the group it stages open
// for appends expected to join it, before it writes the group and fsyncs it.
//
// Appenders mostly append one at a time: a sync job's workers, HTTP clients.
// When each fsync carries whatever waits at the moment it starts, those
// appenders split into two cohorts that take turns (one waits for its fsync
// while the other's runs and comes back), so an fsync carries about half of
// them. An fsync that waits until the appenders just answered have come back
// carries all of them. So the committer expects as many appends as it has
// seen in flight at once (sent and not yet answered: at most one per such
// appender) and closes a group when that many are in it. While an earlier
// group's fsync runs it holds the group without a timer: the fsync ending
// is what lets the others come back. Once no fsync runs, it holds the group
// until no append has come for one fsync's time (measured): waiting longer
// for stragglers costs more than an fsync of their own would. Appends that
// keep coming keep the group open, however long they take to come all. A
// hold that runs out lowers the expectation to the appends that did come.
//
// A lone appender is never held: one append in flight expects nobody else.
//
// Only holds that run out wait for a timer, and those are rare: a Go timer
// under a millisecond fires a millisecond or more late when the process has
// nothing else to do (the runtime's netpoller sleeps in whole milliseconds),
// which is what a fixed commit delay cost every fsync at low concurrency.
type commitHold struct {
	// limit bounds a hold: zero means the measured fsync time, negative
	// never to hold.
	limit time.Duration
	// expected is how many appends a group waits for: the most seen in
	// flight at once, lowered when a hold runs out.
	expected int
}

// arrived notes that the committer took an append; inFlight counts it with
// every other append sent to the committer and not yet answered.
func (h *commitHold) arrived(inFlight int) {
	h.expected = max(h.expected, inFlight)
}

// hold reports whether a group of size appends stays open, and if so until
// when: a zero deadline means until an append arrives or an earlier group's
// fsync ends. syncing says an earlier group waits for its fsync; last is
// when the group opened, took its last append or saw an fsync end, fsync
// the measured time of one.
func (h *commitHold) hold(size int, syncing bool, last time.Time, fsync time.Duration) (bool, time.Time) {
	if h.limit < 0 || size >= h.expected {
		return false, time.Time{}
	}
	if syncing {
		return true, time.Time{}
	}
	wait := fsync
	if h.limit > 0 {
		wait = min(wait, h.limit)
	}
	if wait <= 0 {
		return false, time.Time{}
	}
	return true, last.Add(wait)
}

// ranOut notes that a hold ended at its deadline with size appends in the
// group: the others expected did not come.
func (h *commitHold) ranOut(size int) {
	h.expected = max(size, 1)
}
