// Package esdbdouble is a protocol double of EventStoreDB for tests: a gRPC
// server implementing the parts of EventStoreDB's Streams API that
// EventStore-Client-Go uses, on the server interfaces generated from the
// protocol files that the client module ships. It is not EventStoreDB and
// not a database to run anything on: one process, no cluster, no
// projections, no authentication, no scavenge, no persistent
// subscriptions, no subscriptions to a single stream, no BatchAppend.
// What it does implement, it implements no more forgivingly than
// EventStoreDB, so that code passing its tests does not rely on anything a
// real server would refuse:
//
//   - Append with an expected revision (any, no stream, stream exists, an
//     exact revision) and EventStoreDB's idempotency rules, which are
//     scoped to the stream, not global: a repeat of an append with the same
//     event ids at the same expected revision is acknowledged without
//     appending; with Any (or StreamExists) the ids are only looked up in a
//     bounded cache of recent appends that starts empty on every start, so
//     idempotency there is best effort; the same ids appended at the end of
//     a stream with the right revision, or to another stream, are appended
//     again; a partial repeat fails with a wrong expected version.
//     https://developers.eventstore.com/clients/grpc/appending-events.html,
//     https://developers.eventstore.com/clients/dotnet/21.2/appending/optimistic-concurrency-and-idempotence.html
//     and the server's check,
//     https://github.com/EventStore/EventStore/blob/master/src/EventStore.Core/Services/Storage/ReaderIndex/IndexWriter.cs
//     (CheckCommit).
//   - Every event gets the "type", "content-type" and "created" (100 ns
//     ticks since the Unix epoch) system metadata the client needs; an
//     append without "type" or "content-type" is refused, and so is one
//     whose data and metadata exceed 1 MiB (EventStoreDB's default maximum
//     append size). System streams ("$...") are refused as to a user who
//     is not an admin, but for the metadata streams of user streams.
//   - Reads of a stream and of $all, forwards and backwards. A read of $all
//     forwards from a position includes the event there; backwards starts
//     before it. Positions are byte offsets in the double's log file, as
//     EventStoreDB's are in its transaction log: increasing but sparse.
//   - Catch-up subscriptions to $all, with stream-prefix, event-type-prefix
//     or regular-expression filters. The start position is exclusive
//     ("The positions provided to the subscriptions are exclusive",
//     https://developers.eventstore.com/clients/grpc/subscriptions.html):
//     as EventStoreDB, the double skips the first event at or after it.
//     The subscriber gets a confirmation, the stored events, CaughtUp, then
//     live events; FellBehind when it lags far behind live, then CaughtUp
//     again. Filtered subscriptions get a checkpoint only every
//     checkpointIntervalMultiplier × maxSearchWindow events looked at
//     (https://developers.eventstore.com/clients/grpc/subscriptions.html#server-side-filtering),
//     unfiltered ones none.
//   - Deletes, soft and hard, with an expected revision checked as for
//     an append (https://developers.eventstore.com/clients/grpc/deleting-events.html).
//     A tombstoned (hard-deleted) stream can never be read or written
//     again: reads, appends and deletes of it fail with FailedPrecondition
//     and the "exception: stream-deleted" trailer, which the client turns
//     into its StreamDeleted error; tombstoning it again fails so too. The
//     tombstone is an event of type "$streamDeleted" at revision 2^63-1 in
//     $all. A soft-deleted stream reads as not found; an append recreates
//     it, its revisions going on, and it then reads from the first new
//     one; an append expecting StreamExists fails as deleted, one
//     expecting NoStream is taken. A soft delete is a "$metadata" event of
//     "$$<stream>" whose "$tb" is 2^63-1, and a soft delete of a stream
//     that never had events fails with a wrong expected version. Deleted
//     events stay in $all: EventStoreDB removes them only in a scavenge,
//     which the double does not run.
//   - Stream metadata: appends to and reads of "$$<stream>", the metadata
//     stream of a user stream (every user's to write and read under
//     EventStoreDB's default ACL; those of system streams are refused).
//     Reads of a stream show only what its metadata leaves: nothing below
//     "$tb", only the last "$maxCount" events, none older than "$maxAge"
//     at the time of the read; a metadata stream shows only its last event.
//     Metadata the server could not read (not JSON, a reserved member of
//     the wrong kind) has no effect, as on EventStoreDB. ACLs are stored
//     but not enforced: the double has no users. Setting metadata on a
//     soft-deleted stream recreates it after its last revision. See
//     metadata.go, https://developers.eventstore.com/server/v24.10/features/streams.html.
//   - ServerFeatures: the double announces EventStoreDB DefaultServerVersion
//     (24.10.0), the newest whose Streams API behaviour it has, with the
//     methods it serves; Options.ServerVersion announces another, and
//     Options.NoServerFeatures leaves the service out, as servers before
//     21.10 (the client then sees version 0.0.0).
//
// The log is durable: an append is acknowledged only after an fsync that
// covers it (concurrent appends share fsyncs), readers and subscribers see
// only what is on disk, and a record cut short by a crash is cut off when
// the double starts again. So a test can kill the double (or its process:
// `tvsm esdb-double`) and start it again on the same directory, and every
// acknowledged event is there. Deletes are records of the same log,
// acknowledged the same way, and hold after a restart.
package esdbdouble
