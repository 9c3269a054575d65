package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
)

// keysUsage heads `tvsm keys -h`.
const keysUsage = `Usage: tvsm keys rotate --data DIR --new-master-key-file FILE [--master-key-file FILE]

Rewraps every subscriber's data key of a stopped node on the embedded store
under a new master key, in place: the keys themselves, and so everything
sealed under them, stay as they are. The old master key is
--master-key-file (default DIR.master-key, where a node keeps it when none
is configured); make the new one with
  head -c 32 /dev/urandom | base64 > FILE
then start the node with --master-key-file FILE. A rotation cut short is
completed by running it again with the same files. Copies of the key file
made before keep their keys under the old master key. Nodes on EventStoreDB
keep their keys in streams, which cannot be rewritten in place: rotation is
refused there.

Flags:
`

// keysCmd runs `tvsm keys`.
func keysCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var newFile string
	data, from, err := offlineCommand("keys", "rotate", keysUsage, args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&newFile, "new-master-key-file", "", "the new master key `file`")
	})
	if err != nil {
		return err
	}
	if newFile == "" {
		return &configError{errors.New("--new-master-key-file is required")}
	}
	to, err := sealed.LoadMasterKey(newFile)
	if err != nil {
		return err
	}
	if from.Fingerprint() == to.Fingerprint() {
		return &configError{errors.New("the new master key is the current one")}
	}
	// Opening the event store takes its lock: a node running on the data
	// directory makes this fail instead of racing it.
	store, err := embedded.Open(filepath.Join(data, "events"), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("%w (is the node stopped?)", err)
	}
	defer store.Close()
	keys, err := sealed.OpenFileKeys(filepath.Join(data, "keys"))
	if err != nil {
		return err
	}
	n, err := keys.Rewrap(context.Background(), from, to)
	err = errors.Join(err, keys.Close())
	if err != nil {
		return fmt.Errorf("rewrapped %d keys, then: %w (run it again to finish)", n, err)
	}
	fmt.Fprintf(stdout, "rewrapped %d keys under the master key in %s; start the node with --master-key-file %s\n", n, newFile, newFile)
	return nil
}
