package esdbdouble

import (
	"fmt"
	"regexp"
	"strings"

	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultSearchWindow is EventStoreDB's read batch size, the search window
// of a filter that sets none.
const defaultSearchWindow = 32

// filter is a server-side filter of $all: on the stream name or on the
// event type, by prefixes or a regular expression. A nil filter selects
// every event.
type filter struct {
	onType   bool
	prefixes []string
	re       *regexp.Regexp
	// checkpointInterval is checkpointIntervalMultiplier × maxSearchWindow:
	// a subscription reports a checkpoint after this many events looked at.
	checkpointInterval uint32
}

func filterOf(o *api.ReadReq_Options_FilterOptions) (*filter, error) {
	if o == nil {
		return nil, nil
	}
	f := &filter{}
	var expr *api.ReadReq_Options_FilterOptions_Expression
	switch v := o.GetFilter().(type) {
	case *api.ReadReq_Options_FilterOptions_StreamIdentifier:
		expr = v.StreamIdentifier
	case *api.ReadReq_Options_FilterOptions_EventType:
		expr, f.onType = v.EventType, true
	default:
		return nil, status.Error(codes.InvalidArgument, "filter on neither stream nor event type")
	}
	switch {
	case expr.GetRegex() != "":
		re, err := regexp.Compile(expr.GetRegex())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "filter regex: %v", err)
		}
		f.re = re
	case len(expr.GetPrefix()) > 0:
		f.prefixes = expr.GetPrefix()
	default:
		return nil, status.Error(codes.InvalidArgument, "filter without prefixes or regex")
	}
	window := uint32(defaultSearchWindow)
	if w, ok := o.GetWindow().(*api.ReadReq_Options_FilterOptions_Max); ok {
		if w.Max == 0 {
			return nil, status.Error(codes.InvalidArgument, "filter with a search window of 0")
		}
		window = w.Max
	}
	if o.GetCheckpointIntervalMultiplier() == 0 {
		return nil, status.Error(codes.InvalidArgument, "filter with a checkpoint interval multiplier of 0")
	}
	f.checkpointInterval = o.GetCheckpointIntervalMultiplier() * window
	return f, nil
}

func (f *filter) match(e *event) bool {
	if f == nil {
		return true
	}
	s := e.stream
	if f.onType {
		s = e.typ
	}
	if f.re != nil {
		return f.re.MatchString(s)
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (f *filter) String() string {
	if f == nil {
		return "none"
	}
	on := "stream"
	if f.onType {
		on = "type"
	}
	if f.re != nil {
		return fmt.Sprintf("%s ~ %s", on, f.re)
	}
	return fmt.Sprintf("%s prefixes %q", on, f.prefixes)
}
