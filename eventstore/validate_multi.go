package eventstore

import "fmt"

// ValidateAppendMulti checks what every MultiAppender rejects with
// ErrInvalidAppend: no parts, a part that ValidateAppend rejects, two parts
// on one stream, or one event id in two parts (as within one append).
func ValidateAppendMulti(parts []StreamAppend) error {
	if len(parts) == 0 {
		return fmt.Errorf("%w: multi-stream append without parts", ErrInvalidAppend)
	}
	streams := make(map[string]struct{}, len(parts))
	ids := make(map[EventID]string)
	for _, p := range parts {
		if err := ValidateAppend(p.Stream, p.Events); err != nil {
			return err
		}
		if _, dup := streams[p.Stream]; dup {
			return fmt.Errorf("%w: stream %q in two parts of one append", ErrInvalidAppend, p.Stream)
		}
		streams[p.Stream] = struct{}{}
		for _, e := range p.Events {
			if other, dup := ids[e.ID]; dup {
				return fmt.Errorf("%w: event id %s in the parts of streams %q and %q", ErrInvalidAppend, e.ID, other, p.Stream)
			}
			ids[e.ID] = p.Stream
		}
	}
	return nil
}
