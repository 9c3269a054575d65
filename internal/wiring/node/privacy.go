package node

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"tvsm/eventstore"
	"tvsm/eventstore/sealed"
	"tvsm/projections/readmodel"
)

// sealStore puts the personal-data codec under everything the node reads
// and writes: the subjects' keys from the key store that fits the event
// store, wrapped by the master key. A store that can tombstone streams
// (EventStoreDB) is shared by nodes and keeps the keys in streams; the
// embedded store, whose log never forgets, keeps them in a key file in
// DataDir/keys.
func (n *Node) sealStore(_ context.Context, opts Options) error {
	_, shared := n.backend.(eventstore.Tombstoner)
	master, err := n.masterKey(opts, shared)
	if err != nil {
		return err
	}
	keys := opts.Keys
	switch {
	case keys != nil:
	case shared:
		if keys, err = sealed.NewStreamKeys(n.backend); err != nil {
			return err
		}
	default:
		fk, err := sealed.OpenFileKeys(filepath.Join(opts.DataDir, "keys"))
		if err != nil {
			return err
		}
		n.cleanup.push(func() { _ = fk.Close() })
		keys, n.fileKeys = fk, fk
	}
	n.master = master
	n.Keys = sealed.NewKeyring(keys, master)
	n.Store = sealed.Wrap(n.Store, n.Keys)
	return nil
}

// masterKey returns the master key the options name: given, in the
// environment's setting, or in a file. Without any, a node on its own
// store (embedded) uses the file beside its data directory, generated on
// the first start; nodes on a shared store must be given one.
func (n *Node) masterKey(opts Options, shared bool) (*sealed.MasterKey, error) {
	switch {
	case opts.MasterKey != nil:
		n.masterLocation = "TVSM_MASTER_KEY (or master_key)"
		return opts.MasterKey, nil
	case opts.MasterKeyFile != "":
		n.masterFile, n.masterLocation = opts.MasterKeyFile, opts.MasterKeyFile
		return sealed.LoadMasterKey(opts.MasterKeyFile)
	case shared:
		return nil, errors.New("a shared event store needs a master key, the same on every node: set master_key_file (or TVSM_MASTER_KEY)")
	}
	path := DefaultMasterKeyFile(opts.DataDir)
	n.masterFile, n.masterLocation = path, path
	m, err := sealed.LoadMasterKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return m, err
	}
	if m, err = sealed.GenerateMasterKeyFile(path); err != nil {
		return nil, err
	}
	n.log.Warn("generated the master key that wraps subscribers' data keys; production keeps it elsewhere (master_key_file), and a data directory restored without it reads nothing personal",
		"path", path)
	return m, nil
}

// DefaultMasterKeyFile is where a node on the embedded store keeps its
// master key when none is configured: beside the data directory, not in
// it, so that a copy of the directory alone reads nothing personal.
func DefaultMasterKeyFile(dataDir string) string {
	return filepath.Clean(dataDir) + ".master-key"
}

// newModel returns an empty read model whose snapshots seal the personal
// text under the subscribers' keys.
func (n *Node) newModel() *readmodel.Model {
	m := readmodel.New(n.Registry)
	m.SealSnapshots(n.Keys)
	return m
}
