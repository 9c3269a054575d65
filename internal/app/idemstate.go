package app

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"tvsm/domain"
)

// Event types of idempotency records (stream "idem-{sha256(scope, key)}").
const (
	IdempotencyStartedType  = "IdempotencyStarted.v1"
	IdempotencyIDPinnedType = "IdempotencyIDPinned.v1"
	IdempotencyRecordedType = "IdempotencyRecorded.v1"
	IdempotencyFailedType   = "IdempotencyFailed.v1"
	// IdempotencyLeaseExtendedType renews an attempt's lease.
	IdempotencyLeaseExtendedType = "IdempotencyLeaseExtended.v1"
)

// IdempotencyStarted records that an attempt of a keyed request began and
// owns the key until LeaseUntil. Generation counts uses of the key: a key
// whose record has expired (Options.IdempotencyTTL) starts generation+1;
// attempts of one generation are retries of one request.
type IdempotencyStarted struct {
	Key         string    `json:"key"`
	Scope       string    `json:"scope"`
	RequestHash string    `json:"request_hash"`
	Generation  int       `json:"generation"`
	Attempt     int       `json:"attempt"`
	LeaseUntil  time.Time `json:"lease_until"`
}

// EventType implements domain.Event.
func (IdempotencyStarted) EventType() string { return IdempotencyStartedType }

// IdempotencyIDPinned records the Index-th id of Kind the request uses, so
// every retry uses the same ids. It is appended before the id is used.
type IdempotencyIDPinned struct {
	Generation int    `json:"generation"`
	Kind       string `json:"kind"`
	Index      int    `json:"index"`
	ID         int64  `json:"id"`
}

// EventType implements domain.Event.
func (IdempotencyIDPinned) EventType() string { return IdempotencyIDPinnedType }

// IdempotencyRecorded records the response of the request, replayed to
// every retry until the TTL passes.
//
// Subject is the account whose personal data Body may carry (0: none);
// Body is sealed under its key, and reads as null once it is erased.
type IdempotencyRecorded struct {
	Generation int       `json:"generation"`
	Status     int       `json:"status"`
	Body       []byte    `json:"body"`
	At         time.Time `json:"at"`
	Subject    int64     `json:"subject,omitempty"`
}

// EventType implements domain.Event.
func (IdempotencyRecorded) EventType() string { return IdempotencyRecordedType }

// IdempotencyFailed records that an attempt ended with an error and no
// response: the next retry may take over at once instead of waiting for the
// lease to expire. Unused says the attempt was refused before it took an id
// or ran a command: it changed nothing, so the key is free for another
// request (the client corrected a bad field).
type IdempotencyFailed struct {
	Generation int    `json:"generation"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error"`
	Unused     bool   `json:"unused,omitempty"`
}

// EventType implements domain.Event.
func (IdempotencyFailed) EventType() string { return IdempotencyFailedType }

// IdempotencyLeaseExtended records that the attempt whose work is still
// running holds the key until LeaseUntil.
type IdempotencyLeaseExtended struct {
	Generation int       `json:"generation"`
	Attempt    int       `json:"attempt"`
	LeaseUntil time.Time `json:"lease_until"`
}

// EventType implements domain.Event.
func (IdempotencyLeaseExtended) EventType() string { return IdempotencyLeaseExtendedType }

// idemState is the state of an idempotency record.
type idemState struct {
	Started    bool
	Hash       string
	Generation int
	Attempt    int
	LeaseUntil time.Time
	Failed     bool // the current attempt failed
	Unused     bool // ... before it wrote anything
	Pins       map[string][]int64
	Done       bool
	Status     int
	Body       []byte
	DoneAt     time.Time
}

type idemOp int

const (
	idemBegin idemOp = iota + 1
	idemPin
	idemRecord
	idemFail
	idemExtend
)

// idemCmd is one operation on an idempotency record; which fields matter
// depends on Op.
type idemCmd struct {
	Op         idemOp
	Key, Scope string
	Hash       string
	Lease, TTL time.Duration
	Generation int
	Attempt    int
	Kind       string
	Index      int
	ID         int64
	Status     int
	Body       []byte
	Subject    int64
	Error      string
	Unused     bool
}

var idemDecider = domain.Decider[idemState, idemCmd]{
	Initial: func() idemState { return idemState{} },
	Evolve:  evolveIdem,
	Decide:  decideIdem,
}

func evolveIdem(s idemState, e domain.Event) idemState {
	switch e := e.(type) {
	case IdempotencyStarted:
		if e.Generation != s.Generation {
			s = idemState{}
		}
		s.Started, s.Hash, s.Generation, s.Attempt = true, e.RequestHash, e.Generation, e.Attempt
		s.LeaseUntil, s.Failed, s.Unused = e.LeaseUntil, false, false
	case IdempotencyIDPinned:
		if e.Generation == s.Generation && e.Index == len(s.Pins[e.Kind]) {
			pins := maps.Clone(s.Pins) // Evolve is pure: never modify the input's map
			if pins == nil {
				pins = make(map[string][]int64)
			}
			pins[e.Kind] = append(slices.Clip(pins[e.Kind]), e.ID)
			s.Pins = pins
		}
	case IdempotencyRecorded:
		if e.Generation == s.Generation {
			s.Done, s.Status, s.Body, s.DoneAt = true, e.Status, e.Body, e.At
		}
	case IdempotencyFailed:
		if e.Generation == s.Generation && e.Attempt == s.Attempt {
			s.Failed, s.Unused = true, e.Unused
		}
	case IdempotencyLeaseExtended:
		if e.Generation == s.Generation && e.Attempt == s.Attempt {
			s.LeaseUntil = e.LeaseUntil
		}
	}
	return s
}

func decideIdem(s idemState, c idemCmd, now time.Time) ([]domain.Event, error) {
	switch c.Op {
	case idemBegin:
		start := IdempotencyStarted{Key: c.Key, Scope: c.Scope, RequestHash: c.Hash, LeaseUntil: now.Add(c.Lease)}
		expired := s.Started && ((s.Done && !now.Before(s.DoneAt.Add(c.TTL))) ||
			(!s.Done && !now.Before(s.LeaseUntil.Add(c.TTL))))
		unused := s.Started && !s.Done && s.Failed && s.Unused
		switch {
		case !s.Started || expired || (unused && s.Hash != c.Hash):
			start.Generation, start.Attempt = s.Generation+1, 1
			return []domain.Event{start}, nil
		case s.Hash != c.Hash:
			return nil, ErrIdempotencyMismatch
		case s.Done:
			return nil, nil
		case !s.Failed && now.Before(s.LeaseUntil):
			return nil, &InProgressError{Attempt: s.Attempt, Until: s.LeaseUntil, Wait: s.LeaseUntil.Sub(now)}
		}
		start.Generation, start.Attempt = s.Generation, s.Attempt+1
		return []domain.Event{start}, nil
	case idemPin:
		switch {
		case c.Generation != s.Generation:
			return nil, fmt.Errorf("%w: generation %d replaced by %d", ErrIdempotencyInProgress, c.Generation, s.Generation)
		case c.Index < len(s.Pins[c.Kind]):
			return nil, nil // pinned already (by a concurrent attempt): use that id
		case c.Index > len(s.Pins[c.Kind]):
			return nil, fmt.Errorf("pin %s #%d before #%d", c.Kind, c.Index, len(s.Pins[c.Kind]))
		}
		return []domain.Event{IdempotencyIDPinned{Generation: c.Generation, Kind: c.Kind, Index: c.Index, ID: c.ID}}, nil
	case idemRecord:
		if c.Generation != s.Generation || s.Done {
			return nil, nil // the first recorded response stands
		}
		return []domain.Event{IdempotencyRecorded{Generation: c.Generation, Status: c.Status, Body: c.Body, At: now, Subject: c.Subject}}, nil
	case idemFail:
		if c.Generation != s.Generation || c.Attempt != s.Attempt || s.Done || s.Failed {
			return nil, nil
		}
		return []domain.Event{IdempotencyFailed{Generation: c.Generation, Attempt: c.Attempt, Error: c.Error, Unused: c.Unused}}, nil
	case idemExtend:
		if c.Generation != s.Generation || c.Attempt != s.Attempt || s.Done || s.Failed {
			return nil, errLeaseLost
		}
		return []domain.Event{IdempotencyLeaseExtended{Generation: c.Generation, Attempt: c.Attempt, LeaseUntil: now.Add(c.Lease)}}, nil
	}
	return nil, fmt.Errorf("unknown idempotency operation %d", c.Op)
}
