package record

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"tvsm/eventstore"
)

// Defaults of Policy.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 2 * time.Millisecond
)

// Policy is how an operation on the event store is retried (see the package
// documentation). The zero value uses the defaults.
type Policy struct {
	// MaxAttempts bounds the tries of one operation (default 5): the sends
	// of an append, together with whatever failures the caller counts
	// besides (Log.AppendCounting).
	MaxAttempts int
	// BaseDelay is the base of the jittered exponential pause between tries
	// (default 2 ms); the pause never exceeds 32×BaseDelay.
	BaseDelay time.Duration
	// AttemptTimeout bounds each send of an append; zero leaves it to the
	// caller's context.
	AttemptTimeout time.Duration
}

// Attempts is MaxAttempts, or its default.
func (p Policy) Attempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// Pause sleeps before the next try of an operation that has failed failures
// times (at least 1): a pause drawn uniformly from [d/2, 3d/2) with
// d = BaseDelay × 2^(failures-1), d at most 32×BaseDelay. Spreading the
// pauses keeps writers that lost the same race from meeting again. It
// returns early with the context's error.
func (p Policy) Pause(ctx context.Context, failures int) error {
	base := p.BaseDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	d := base << min(max(failures-1, 0), 5)
	d = d/2 + rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resend calls send, and again after a pause for as long as its outcome is
// unknown, counting each failed send in *failures and sending no more once
// it reaches Attempts. Each send gets its own AttemptTimeout.
func (p Policy) resend(ctx context.Context, failures *int, send func(context.Context) error) error {
	for {
		err := p.send(ctx, send)
		if err == nil || !outcomeUnknown(ctx, err) {
			return err
		}
		*failures++
		if *failures >= p.Attempts() {
			return err
		}
		if p.Pause(ctx, *failures) != nil {
			return err
		}
	}
}

func (p Policy) send(ctx context.Context, send func(context.Context) error) error {
	if p.AttemptTimeout <= 0 {
		return send(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, p.AttemptTimeout)
	defer cancel()
	return send(actx)
}

// verdicts are the errors with which a store decides an append: resending
// it cannot change the answer.
var verdicts = [...]error{
	eventstore.ErrWrongExpectedRevision, eventstore.ErrDuplicateEventID,
	eventstore.ErrInvalidAppend, eventstore.ErrClosed, eventstore.ErrStreamNotFound,
}

// outcomeUnknown reports whether an append error leaves open whether the
// events were stored, so that resending the same append is the way to find
// out: anything but the store's verdicts and the end of the caller's own
// context.
func outcomeUnknown(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	for _, verdict := range verdicts {
		if errors.Is(err, verdict) {
			return false
		}
	}
	return true
}
