package domain

import "strings"

// StreamKind is what a domain stream holds: an aggregate, a send's
// commands or receipts, or a device's sessions. The zero value is no kind:
// a stream the domain does not name (the application layer's bookkeeping
// streams, for example).
type StreamKind uint8

// The kinds of the streams the domain's stream helpers name.
const (
	StreamAccount    StreamKind = iota + 1 // AccountStream
	StreamProvider                         // ProviderStream
	StreamTariff                           // TariffStream
	StreamChannel                          // ChannelStream
	StreamCategory                         // CategoryStream
	StreamAdmin                            // AdminStream
	StreamCommand                          // CommandStream
	StreamReceipt                          // ReceiptStream
	StreamDevice                           // DeviceStream
	StreamTariffTag                        // TariffTagStream
	StreamRegion                           // RegionStream
	StreamDeviceType                       // DeviceTypeStream
	StreamNetworks                         // NetworksStream
	lastStreamKind   = StreamNetworks
)

// streamPrefixes are the stream name prefixes by kind; every name of a kind
// is its prefix followed by an id (a login for admins).
var streamPrefixes = [...]string{
	StreamAccount:  "account-",
	StreamProvider: "provider-",
	StreamTariff:   "tariff-",
	StreamChannel:  "channel-",
	StreamCategory: "category-",
	StreamAdmin:    "admin-",
	StreamCommand:  "command-",
	StreamReceipt:  "receipt-",
	StreamDevice:   "device-",
	// Underscores, not dashes: the first dash ends a stream's prefix.
	StreamTariffTag:  "tariff_tag-",
	StreamRegion:     "region-",
	StreamDeviceType: "device_type-",
	StreamNetworks:   "networks-",
}

// Prefix returns what the names of k's streams begin with ("account-"),
// for subscription filters; "" for no kind.
func (k StreamKind) Prefix() string {
	if int(k) >= len(streamPrefixes) {
		return ""
	}
	return streamPrefixes[k]
}

// String returns the kind's prefix without its dash ("account").
func (k StreamKind) String() string {
	if p := k.Prefix(); p != "" {
		return p[:len(p)-1]
	}
	return "none"
}

// StreamRef is a parsed stream name: its kind and the id, or for admins
// the login, in it.
type StreamRef struct {
	Kind  StreamKind
	ID    int64  // positive; 0 for admin streams
	Login string // admin streams only; never empty there
}

// Name returns the stream name r was parsed from: ParseStream(r.Name())
// returns r for every r ParseStream returns.
func (r StreamRef) Name() string {
	switch {
	case r.Kind == StreamAdmin:
		return AdminStream(r.Login)
	case int(r.Kind) < len(idStreams) && idStreams[r.Kind] != nil:
		return idStreams[r.Kind](r.ID)
	}
	return ""
}

// idStreams are the helpers naming the streams of an id, by kind.
var idStreams = [...]func(int64) string{
	StreamAccount: AccountStream, StreamProvider: ProviderStream, StreamTariff: TariffStream,
	StreamChannel: ChannelStream, StreamCategory: CategoryStream, StreamCommand: CommandStream,
	StreamReceipt: ReceiptStream, StreamDevice: DeviceStream, StreamTariffTag: TariffTagStream,
	StreamRegion: RegionStream, StreamDeviceType: DeviceTypeStream, StreamNetworks: NetworksStream,
}

// ParseStream is the inverse of the stream helpers (AccountStream,
// AdminStream, CommandStream, DeviceStream and the others): it returns the
// kind and id (or login) of a name they write. Names come from the store,
// so anything else, including an id not written as strconv.FormatInt writes
// a positive one ("account-007", "account-+7", "account-0"), an empty admin
// login or a name of no domain stream ("ids-account"), gives ok false.
func ParseStream(name string) (ref StreamRef, ok bool) {
	dash := strings.IndexByte(name, '-')
	if dash < 0 {
		return StreamRef{}, false
	}
	prefix, rest := name[:dash+1], name[dash+1:]
	var kind StreamKind
	for k := StreamAccount; k <= lastStreamKind; k++ {
		if streamPrefixes[k] == prefix {
			kind = k
			break
		}
	}
	switch {
	case kind == 0:
		return StreamRef{}, false
	case kind == StreamAdmin:
		if rest == "" {
			return StreamRef{}, false
		}
		return StreamRef{Kind: kind, Login: rest}, true
	}
	id, ok := canonicalInt(rest)
	if !ok || id <= 0 {
		return StreamRef{}, false
	}
	return StreamRef{Kind: kind, ID: id}, true
}
