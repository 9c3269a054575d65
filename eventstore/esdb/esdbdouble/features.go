package esdbdouble

import (
	"context"
	"fmt"
	"regexp"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
)

// DefaultServerVersion is the EventStoreDB version the double announces.
// It is the newest version whose Streams API behaviour the double has:
// positions in stream reads (22.6 on), CaughtUp in subscriptions (23.10
// on), and FellBehind, after which a subscription reads on as in catch-up
// and is told CaughtUp again (24.2 on). The Streams protocol file is the
// same from 23.10 to 24.10, the last EventStoreDB release before KurrentDB.
const DefaultServerVersion = "24.10.0"

// serverVersionPattern is what the client can parse: it reads the first
// three dot-separated parts as numbers and refuses the server otherwise.
var serverVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

func checkServerVersion(v string) error {
	if !serverVersionPattern.MatchString(v) {
		return fmt.Errorf("esdbdouble: server version %q is not MAJOR.MINOR.PATCH", v)
	}
	return nil
}

// features implements EventStoreDB's ServerFeatures service (21.10 on),
// which clients ask on connecting for the server's version and methods.
type features struct {
	serverfeatures.UnimplementedServerFeaturesServer
	version string
}

// GetSupportedMethods lists the methods the double serves, as EventStoreDB
// names them: the gRPC service and method names in lower case, with the
// features EventStoreDB lists for its reads (ServerFeatures.cs in
// https://github.com/EventStore/EventStore). It leaves out what the double
// does not serve, BatchAppend and the other services among them.
func (f *features) GetSupportedMethods(context.Context, *shared.Empty) (*serverfeatures.SupportedMethods, error) {
	const (
		streamsService  = "event_store.client.streams.streams"
		featuresService = "event_store.client.server_features.serverfeatures"
	)
	return &serverfeatures.SupportedMethods{
		EventStoreServerVersion: f.version,
		Methods: []*serverfeatures.SupportedMethod{
			{ServiceName: streamsService, MethodName: "read", Features: []string{"position", "events"}},
			{ServiceName: streamsService, MethodName: "append"},
			{ServiceName: streamsService, MethodName: "delete"},
			{ServiceName: streamsService, MethodName: "tombstone"},
			{ServiceName: featuresService, MethodName: "getsupportedmethods"},
		},
	}, nil
}
