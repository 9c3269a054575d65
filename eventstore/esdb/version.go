package esdb

import (
	"errors"
	"fmt"

	client "github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// MinServerVersion is the oldest EventStoreDB the backend works on: 22.6,
// the first whose stream reads carry the events' positions in $all (older
// servers send none, which the client reads as 2^64-1). The executor
// answers a command that changes nothing with the position of the last
// event of the stream it read, which read-your-writes waits then wait
// for; with 2^64-1 they would never end. Everything else the backend uses
// is older: appends with expected revisions, reads, hard deletes, and
// subscriptions to $all (CaughtUp, which 23.10 added, is used when it comes
// and not needed).
var MinServerVersion = client.ServerVersion{Major: 22, Minor: 6}

// ErrServerTooOld is the error of Open on a server older than
// MinServerVersion, or one that does not say its version.
var ErrServerTooOld = errors.New("server too old")

func versionString(v client.ServerVersion) string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

func older(v, than client.ServerVersion) bool {
	if v.Major != than.Major {
		return v.Major < than.Major
	}
	if v.Minor != than.Minor {
		return v.Minor < than.Minor
	}
	return v.Patch < than.Patch
}

// checkServerVersion refuses a server older than MinServerVersion. The
// client asks the server its version when it connects; a server without
// the ServerFeatures API (EventStoreDB before 21.10) tells none, and the
// client reports 0.0.0.
func checkServerVersion(c *client.Client) error {
	v, err := c.GetServerVersion()
	if err != nil {
		return err
	}
	switch {
	case *v == client.ServerVersion{}:
		return fmt.Errorf("%w: it does not tell its version (it has no ServerFeatures API: EventStoreDB before 21.10); tvsm needs EventStoreDB %s or newer",
			ErrServerTooOld, versionString(MinServerVersion))
	case older(*v, MinServerVersion):
		return fmt.Errorf("%w: it is EventStoreDB %s; tvsm needs %s or newer (stream reads carry event positions only from 22.6 on)",
			ErrServerTooOld, versionString(*v), versionString(MinServerVersion))
	}
	return nil
}
