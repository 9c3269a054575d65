package backup

import "errors"

// Errors of a node asked for a backup.
var (
	// ErrNotOwned: the node's event log is not on its disk (EventStoreDB),
	// so it cannot copy it.
	ErrNotOwned = errors.New("this node's event log is in EventStoreDB, which the node does not own: back EventStoreDB up by its own procedure " +
		"(https://developers.eventstore.com/server/v21.10/operations/database-backup.html; docs/operations.md, Backups)")
	// ErrRunning: a backup is being staged on the node.
	ErrRunning = errors.New("a backup is being staged on this node; wait for it")
	// ErrNoBackup: no staged backup of that id (removed, expired or replaced
	// by a newer one), or no such file in it.
	ErrNoBackup = errors.New("no such staged backup or file on this node (a newer backup replaces it; an idle one is removed)")
	// ErrNoMasterKeyFile: a backup with the master key was asked of a node
	// given its master key by value.
	ErrNoMasterKeyFile = errors.New("no master key file to include")
	// ErrReadModelBehind: the node's read model did not apply the log the
	// backup copied in time (the copy's key file must agree with the
	// erasures the read model knows).
	ErrReadModelBehind = errors.New("the node's read model has not applied the log the backup copied")
	// ErrNotSameLog: an incremental backup was asked since a backup of
	// another log (another node's, or one this node's log no longer
	// continues, as after a restore of an older backup).
	ErrNotSameLog = errors.New("the backup to make this one since is not of this node's log")
)
