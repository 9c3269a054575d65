package esdbdouble

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Defaults of Options.
const (
	// DefaultRecentIDs is how many event ids the double remembers for
	// appends with expected revision Any.
	DefaultRecentIDs = 100_000
	// DefaultMaxAppendSize is EventStoreDB's default limit on the data and
	// metadata of one append (1 MiB).
	DefaultMaxAppendSize = 1 << 20
)

// Options configure a Server. The zero value gives the defaults.
type Options struct {
	// RecentIDs bounds the cache of event ids against which appends with
	// expected revision Any or StreamExists are checked (default
	// DefaultRecentIDs; negative: none, so every such repeat is appended
	// again). The cache starts empty on every start, as EventStoreDB's.
	RecentIDs int
	// MaxAppendSize bounds the bytes of data and metadata of one append
	// (default DefaultMaxAppendSize).
	MaxAppendSize int
	// Logger receives the double's logs (default: discarded).
	Logger *slog.Logger
	// Clock stamps the events' created time (default time.Now).
	Clock func() time.Time
	// SyncDelay makes every fsync of an append take at least this long
	// (tests: a slow disk, which keeps written events from readers longer).
	SyncDelay time.Duration
	// ServerVersion is the EventStoreDB version announced through the
	// ServerFeatures service, MAJOR.MINOR.PATCH (default
	// DefaultServerVersion). Tests of clients' version checks set another.
	ServerVersion string
	// NoServerFeatures leaves the ServerFeatures service out, as servers
	// before 21.10: clients then take the server for version 0.0.0.
	NoServerFeatures bool
}

// Server is a running double: the log in its data directory and the gRPC
// server in front of it.
type Server struct {
	log   *eventLog
	opts  Options
	grpc  *grpc.Server
	lis   net.Listener
	done  chan struct{}
	once  sync.Once
	serve chan error
	// stalls counts StallSubscriptions calls; a subscription opened before
	// the latest one sends nothing more.
	stalls atomic.Int64
}

// StallSubscriptions makes every subscription open now go silent: it stays
// open but delivers nothing more, as EventStoreDB's subscriptions have
// been seen to (https://github.com/kurrent-io/KurrentDB/issues/2544). For
// tests of the client's watchdog; subscriptions opened later are served
// normally.
func (s *Server) StallSubscriptions() { s.stalls.Add(1) }

// Start opens (or creates) the double's log in dir and serves the Streams
// API on addr ("127.0.0.1:0" picks a free port; see Addr) until Close.
func Start(dir, addr string, opts Options) (*Server, error) {
	if opts.RecentIDs == 0 {
		opts.RecentIDs = DefaultRecentIDs
	}
	if opts.MaxAppendSize <= 0 {
		opts.MaxAppendSize = DefaultMaxAppendSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	if err := checkServerVersion(opts.ServerVersion); err != nil {
		return nil, err
	}
	l, err := openLog(dir, opts.RecentIDs)
	if err != nil {
		return nil, err
	}
	l.syncDelay = opts.SyncDelay
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		l.close()
		return nil, err
	}
	s := &Server{
		log:  l,
		opts: opts,
		// EventStoreDB's clients ping every 10 s, also without calls in
		// flight; grpc-go's default policy would close such connections.
		grpc: grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: time.Second, PermitWithoutStream: true,
		})),
		lis:   lis,
		done:  make(chan struct{}),
		serve: make(chan error, 1),
	}
	api.RegisterStreamsServer(s.grpc, &streams{s: s})
	if !opts.NoServerFeatures {
		serverfeatures.RegisterServerFeaturesServer(s.grpc, &features{version: opts.ServerVersion})
	}
	go func() { s.serve <- s.grpc.Serve(lis) }()
	opts.Logger.Info("listening", "addr", lis.Addr().String(), "dir", dir, "events", len(l.events), "version", announced(opts))
	return s, nil
}

// announced is the version clients see: none without ServerFeatures.
func announced(opts Options) string {
	if opts.NoServerFeatures {
		return "none (no ServerFeatures)"
	}
	return opts.ServerVersion
}

// Addr is the address the double listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// URL is the connection string of the double for EventStoreDB's clients.
func (s *Server) URL() string { return "esdb://" + s.Addr() + "?tls=false" }

// Close stops serving at once, failing calls in flight as a crashed server
// would (what was acknowledged is on disk), and closes the log.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		s.grpc.Stop()
		err = s.log.close()
		if serr := <-s.serve; serr != nil && !errors.Is(serr, grpc.ErrServerStopped) {
			err = errors.Join(err, serr)
		}
	})
	return err
}

// streams implements EventStoreDB's Streams service.
type streams struct {
	api.UnimplementedStreamsServer
	s *Server
}

// Append implements the Append call: the options, then the events, then
// one answer.
func (st *streams) Append(call api.Streams_AppendServer) error {
	first, err := call.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "the first message of an append must carry its options")
	}
	stream := string(o.GetStreamIdentifier().GetStreamName())
	if err := checkAppendStream(stream); err != nil {
		return err
	}
	exp, err := expectationOf(o)
	if err != nil {
		return err
	}
	now := st.s.opts.Clock()
	created := now.UnixNano() / 100
	var evs []*event
	size := 0
	for {
		req, err := call.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		e, err := proposedEvent(req.GetProposedMessage(), created)
		if err != nil {
			return err
		}
		size += len(e.data) + len(e.meta)
		if size > st.s.opts.MaxAppendSize {
			return maxAppendSizeExceeded(st.s.opts.MaxAppendSize)
		}
		evs = append(evs, e)
	}

	l := st.s.log
	l.mu.Lock()
	res, err := l.decide(stream, exp, evs)
	l.mu.Unlock()
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	if res.wrong {
		return call.SendAndClose(wrongExpectedVersion(exp, res.current))
	}
	if err := l.waitDurable(res.wait); err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	if res.deleted {
		return streamDeletedError(call.SetTrailer, stream)
	}
	ok := &api.AppendResp_Success{}
	if res.empty && res.current < 0 {
		ok.CurrentRevisionOption = &api.AppendResp_Success_NoStream{NoStream: &shared.Empty{}}
	} else {
		ok.CurrentRevisionOption = &api.AppendResp_Success_CurrentRevision{CurrentRevision: res.rev}
	}
	if res.empty {
		ok.PositionOption = &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}}
	} else {
		ok.PositionOption = &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{CommitPosition: res.pos, PreparePosition: res.pos}}
	}
	return call.SendAndClose(&api.AppendResp{Result: &api.AppendResp_Success_{Success: ok}})
}

// checkStreamName refuses what EventStoreDB refuses an anonymous writer:
// an empty name, and system streams ("$...", writable by admins only).
func checkStreamName(stream string) error {
	switch {
	case stream == "":
		return status.Error(codes.InvalidArgument, "empty stream name")
	case strings.HasPrefix(stream, "$"):
		return status.Errorf(codes.PermissionDenied, "access denied to system stream %q", stream)
	}
	return nil
}

// checkAppendStream is checkStreamName for appends, which may also go to
// the metadata stream of a user stream: EventStoreDB's default ACL lets
// every user write ("$mw") and read ("$mr") the metadata of user streams.
func checkAppendStream(stream string) error {
	if orig, ok := isMetastream(stream); ok && orig != "" && !strings.HasPrefix(orig, "$") {
		return nil
	}
	return checkStreamName(stream)
}

func expectationOf(o *api.AppendReq_Options) (expectation, error) {
	switch v := o.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Any:
		return expectation{kind: expectAny}, nil
	case *api.AppendReq_Options_NoStream:
		return expectation{kind: expectNoStream}, nil
	case *api.AppendReq_Options_StreamExists:
		return expectation{kind: expectStreamExists}, nil
	case *api.AppendReq_Options_Revision:
		return expectation{kind: expectExact, rev: v.Revision}, nil
	}
	return expectation{}, status.Error(codes.InvalidArgument, "append without an expected stream revision")
}

// proposedEvent checks one proposed event as EventStoreDB does: an id, and
// the "type" and "content-type" metadata are required.
func proposedEvent(pm *api.AppendReq_ProposedMessage, created int64) (*event, error) {
	if pm == nil {
		return nil, status.Error(codes.InvalidArgument, "an append's messages after the first must be proposed events")
	}
	id, err := parseUUID(pm.GetId())
	if err != nil {
		return nil, err
	}
	typ, ok := pm.GetMetadata()["type"]
	if !ok {
		return nil, status.Error(codes.InvalidArgument, "required metadata property is missing: type")
	}
	ct, ok := pm.GetMetadata()["content-type"]
	if !ok {
		return nil, status.Error(codes.InvalidArgument, "required metadata property is missing: content-type")
	}
	if typ == "" {
		return nil, status.Error(codes.InvalidArgument, "empty event type")
	}
	return &event{id: id, typ: typ, contentType: ct, created: created, meta: pm.GetCustomMetadata(), data: pm.GetData()}, nil
}

func parseUUID(u *shared.UUID) ([16]byte, error) {
	var id [16]byte
	switch v := u.GetValue().(type) {
	case *shared.UUID_Structured_:
		putInt64(id[:8], v.Structured.GetMostSignificantBits())
		putInt64(id[8:], v.Structured.GetLeastSignificantBits())
		return id, nil
	case *shared.UUID_String_:
		parsed, err := uuid.Parse(v.String_)
		if err != nil {
			return id, status.Errorf(codes.InvalidArgument, "invalid event id %q", v.String_)
		}
		return parsed, nil
	}
	return id, status.Error(codes.InvalidArgument, "event without an id")
}

func putInt64(b []byte, v int64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func getInt64(b []byte) int64 {
	var v int64
	for _, c := range b[:8] {
		v = v<<8 | int64(c)
	}
	return v
}

func maxAppendSizeExceeded(limit int) error {
	return status.Errorf(codes.InvalidArgument, "maximum append size of %d bytes exceeded", limit)
}

// wrongExpectedVersion is the answer to an append refused for its
// expected revision, in the fields of current servers and of 20.6.
func wrongExpectedVersion(exp expectation, current int64) *api.AppendResp {
	w := &api.AppendResp_WrongExpectedVersion{}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
		w.CurrentRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_NoStream_20_6_0{NoStream_20_6_0: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
		w.CurrentRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_CurrentRevision_20_6_0{CurrentRevision_20_6_0: uint64(current)}
	}
	switch exp.kind {
	case expectAny:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_Any_20_6_0{Any_20_6_0: &shared.Empty{}}
	case expectStreamExists:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_StreamExists_20_6_0{StreamExists_20_6_0: &shared.Empty{}}
	case expectNoStream:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	default:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: exp.rev}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_ExpectedRevision_20_6_0{ExpectedRevision_20_6_0: exp.rev}
	}
	return &api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

// Read implements the Read call: a read of a stream or of $all, or a
// subscription to $all.
func (st *streams) Read(req *api.ReadReq, call api.Streams_ReadServer) error {
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "read without options")
	}
	r := reader{s: st.s, call: call, idsAsStrings: o.GetUuidOption().GetString_() != nil}
	f, err := filterOf(o.GetFilter())
	if err != nil {
		return err
	}
	backwards := o.GetReadDirection() == api.ReadReq_Options_Backwards
	switch count := o.GetCountOption().(type) {
	case *api.ReadReq_Options_Count:
		if so := o.GetStream(); so != nil {
			return r.readStream(so, backwards, count.Count)
		}
		if ao := o.GetAll(); ao != nil {
			return r.readAll(ao, backwards, count.Count, f)
		}
	case *api.ReadReq_Options_Subscription:
		if o.GetStream() != nil {
			return status.Error(codes.Unimplemented, "the protocol double implements subscriptions to $all only")
		}
		if ao := o.GetAll(); ao != nil {
			if backwards {
				return status.Error(codes.InvalidArgument, "a subscription reads forwards")
			}
			return r.subscribe(ao, f)
		}
	}
	return status.Error(codes.InvalidArgument, "read without a stream or $all, or without a count or subscription")
}

// reader serves one Read call.
type reader struct {
	s            *Server
	call         api.Streams_ReadServer
	idsAsStrings bool
}

// readStream reads a stream as EventStoreDB does, deletes and metadata
// included: a tombstoned stream fails with stream deleted, a soft-deleted
// one reads as not found, and otherwise the read shows only the events its
// metadata leaves (see metadata.go), none at all if it leaves none.
func (r *reader) readStream(o *api.ReadReq_Options_StreamOptions, backwards bool, count uint64) error {
	stream := string(o.GetStreamIdentifier().GetStreamName())
	if stream == "" {
		return status.Error(codes.InvalidArgument, "empty stream name")
	}
	l := r.s.log
	v := l.durableView(stream, r.s.opts.Clock().UnixNano()/100)
	switch {
	case v.deleted:
		return streamDeletedError(r.call.SetTrailer, stream)
	case v.notFound:
		return r.call.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(stream)},
		}}})
	}
	var from int64
	switch rev := o.GetRevisionOption().(type) {
	case *api.ReadReq_Options_StreamOptions_Start:
		from = 0
	case *api.ReadReq_Options_StreamOptions_End:
		if !backwards {
			return nil
		}
		from = v.last
	case *api.ReadReq_Options_StreamOptions_Revision:
		from = int64(min(rev.Revision, math.MaxInt64))
	default:
		return status.Error(codes.InvalidArgument, "stream read without a revision option")
	}
	if backwards {
		for rev, sent := min(from, v.last), uint64(0); rev >= v.first && sent < count; rev, sent = rev-1, sent+1 {
			if err := r.send(l.event(v.idx[rev])); err != nil {
				return err
			}
		}
		return nil
	}
	for rev, sent := max(from, v.first), uint64(0); rev <= v.last && sent < count; rev, sent = rev+1, sent+1 {
		if err := r.send(l.event(v.idx[rev])); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) readAll(o *api.ReadReq_Options_AllOptions, backwards bool, count uint64, f *filter) error {
	l := r.s.log
	durable, _ := l.watch()
	var i int // index of the first event to consider
	switch v := o.GetAllOption().(type) {
	case *api.ReadReq_Options_AllOptions_Start:
		if backwards {
			return nil
		}
		i = 0
	case *api.ReadReq_Options_AllOptions_End:
		if !backwards {
			return nil
		}
		i = durable - 1
	case *api.ReadReq_Options_AllOptions_Position:
		at, err := r.position(v.Position)
		if err != nil {
			return err
		}
		// Forwards from an event's position includes it; backwards
		// starts before it.
		i = at
		if backwards {
			i--
		}
	default:
		return status.Error(codes.InvalidArgument, "$all read without a position option")
	}
	for sent := uint64(0); sent < count && i >= 0 && i < durable; {
		e := l.event(i)
		if f.match(e) {
			if err := r.send(e); err != nil {
				return err
			}
			sent++
		}
		if backwards {
			i--
		} else {
			i++
		}
	}
	return nil
}

// position returns the index of the event at p (the durable count for the
// end of $all). EventStoreDB reads only at positions of its log records;
// the double accepts 0, the positions of its events and the end.
func (r *reader) position(p *api.ReadReq_Options_Position) (int, error) {
	if p.GetCommitPosition() != p.GetPreparePosition() {
		return 0, status.Errorf(codes.InvalidArgument, "invalid position %d/%d", p.GetCommitPosition(), p.GetPreparePosition())
	}
	l := r.s.log
	pos := p.GetCommitPosition()
	i, exact := l.indexOf(pos)
	if !exact && pos != 0 && pos != l.durableEnd() {
		return 0, status.Errorf(codes.InvalidArgument, "invalid position %d/%d: no event there", pos, pos)
	}
	return i, nil
}

// subscribe serves a catch-up subscription to $all as EventStoreDB does:
// a confirmation, the stored events after the start, CaughtUp, then the
// new events as they become durable. A filtered subscription also gets a
// checkpoint (the position of the last event looked at) every
// checkpointIntervalMultiplier × maxSearchWindow events looked at,
// matching or not; an unfiltered one gets none. A live subscriber more
// than fellBehindAfter events behind is told FellBehind, reads on as in
// catch-up, and gets CaughtUp again when it reaches the end.
//
// A start position is exclusive: EventStoreDB reads the first event at or
// after it and starts after that one, so a position must be an event's
// (or the end).
func (r *reader) subscribe(o *api.ReadReq_Options_AllOptions, f *filter) error {
	l := r.s.log
	var next int
	switch v := o.GetAllOption().(type) {
	case *api.ReadReq_Options_AllOptions_Start:
		next = 0
	case *api.ReadReq_Options_AllOptions_End:
		next, _ = l.watch()
	case *api.ReadReq_Options_AllOptions_Position:
		at, err := r.position(v.Position)
		if err != nil {
			return err
		}
		next = at
		if durable, _ := l.watch(); at < durable {
			next = at + 1
		}
	default:
		return status.Error(codes.InvalidArgument, "subscription without a start")
	}
	id := uuid.NewString()
	if err := r.call.Send(&api.ReadResp{Content: &api.ReadResp_Confirmation{Confirmation: &api.ReadResp_SubscriptionConfirmation{SubscriptionId: id}}}); err != nil {
		return err
	}
	r.s.opts.Logger.Debug("subscription", "id", id, "from", next, "filter", f.String())
	ctx := r.call.Context()
	stalls := r.s.stalls.Load()
	caughtUp := false
	var looked uint32 // events looked at since the last checkpoint
	for {
		if r.s.stalls.Load() != stalls {
			select {
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			case <-r.s.done:
				return status.Error(codes.Unavailable, "server stopping")
			}
		}
		durable, wake := l.watch()
		if next < durable {
			if caughtUp && durable-next > fellBehindAfter {
				if err := r.call.Send(&api.ReadResp{Content: &api.ReadResp_FellBehind_{FellBehind: &api.ReadResp_FellBehind{}}}); err != nil {
					return err
				}
				caughtUp = false
			}
			for _, e := range l.durableEvents(next, min(durable, next+subscriptionPage)) {
				next++
				if f.match(e) {
					if err := r.send(e); err != nil {
						return err
					}
				}
				if f == nil {
					continue
				}
				if looked++; looked >= f.checkpointInterval {
					looked = 0
					if err := r.call.Send(&api.ReadResp{Content: &api.ReadResp_Checkpoint_{Checkpoint: &api.ReadResp_Checkpoint{
						CommitPosition: e.pos, PreparePosition: e.pos,
					}}}); err != nil {
						return err
					}
				}
			}
			continue
		}
		if !caughtUp {
			if err := r.call.Send(&api.ReadResp{Content: &api.ReadResp_CaughtUp_{CaughtUp: &api.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
			caughtUp = true
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-r.s.done:
			return status.Error(codes.Unavailable, "server stopping")
		}
	}
}

const (
	// subscriptionPage bounds the events a subscription takes from the log
	// at a time.
	subscriptionPage = 512
	// fellBehindAfter is how far behind a live subscriber may fall before
	// it is told FellBehind.
	fellBehindAfter = 4096
)

func (r *reader) send(e *event) error {
	return r.call.Send(&api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
		Event: &api.ReadResp_ReadEvent_RecordedEvent{
			Id:               r.uuid(e.id),
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(e.stream)},
			StreamRevision:   e.rev,
			PreparePosition:  e.pos,
			CommitPosition:   e.pos,
			Metadata: map[string]string{
				"type":         e.typ,
				"content-type": e.contentType,
				"created":      fmt.Sprint(e.created),
			},
			CustomMetadata: e.meta,
			Data:           e.data,
		},
		Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: e.pos},
	}}})
}

func (r *reader) uuid(id [16]byte) *shared.UUID {
	if r.idsAsStrings {
		return &shared.UUID{Value: &shared.UUID_String_{String_: uuid.UUID(id).String()}}
	}
	return &shared.UUID{Value: &shared.UUID_Structured_{Structured: &shared.UUID_Structured{
		MostSignificantBits: getInt64(id[:8]), LeastSignificantBits: getInt64(id[8:]),
	}}}
}
