package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"tvsm/eventstore/embedded"
	"tvsm/eventstore/sealed"
	"tvsm/internal/app"
	"tvsm/internal/platform/fsutil"
)

// storeUsage heads `tvsm store -h`.
const storeUsage = `Usage: tvsm store encrypt --data DIR [--master-key-file FILE] [--keep-plain]

Rewrites the event log of a stopped node on the embedded store written
before personal data was sealed: every event is copied, in order, into a
new log beside it (DIR/events.sealing) with its personal values sealed
under its subscriber's key (an erased subscriber's as "erased"), the login
reservation streams renamed so that no login is left in a stream name; the
copy is then read back and compared with the old log event by event (same
positions, ids, types, metadata, and data once opened), and only then
replaces DIR/events. The old log is deleted unless --keep-plain (then it
stays in DIR/events.plain: delete it yourself once satisfied, it holds
personal data in plain text). Run it again after a failure: a copy left
half-way is started afresh. EventStoreDB cannot be rewritten in place;
docs/privacy.md says what it needs.

Flags:
`

// storeCmd runs `tvsm store`.
func storeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var keepPlain bool
	data, master, err := offlineCommand("store", "encrypt", storeUsage, args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&keepPlain, "keep-plain", false, "keep the old log in DIR/events.plain")
	})
	if err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	oldDir, newDir := filepath.Join(data, "events"), filepath.Join(data, "events.sealing")
	// Opening the log takes its lock: a running node makes this fail.
	old, err := embedded.Open(oldDir, embedded.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("%w (is the node stopped?)", err)
	}
	defer old.Close()
	if err := os.RemoveAll(newDir); err != nil { // a copy left half-way
		return err
	}
	copyStore, err := embedded.Open(newDir, embedded.Options{Logger: log})
	if err != nil {
		return err
	}
	keys, err := sealed.OpenFileKeys(filepath.Join(data, "keys"))
	if err != nil {
		_ = copyStore.Close()
		return err
	}
	defer keys.Close()
	ring := sealed.NewKeyring(keys, master)
	nameKey, err := ring.NameKey(ctx)
	if err != nil {
		_ = copyStore.Close()
		return err
	}
	rename := legacyLoginRename(nameKey)
	head, err := old.Head(ctx)
	if err != nil {
		_ = copyStore.Close()
		return err
	}
	total := head.Commit
	copied, err := ring.Copy(ctx, old, copyStore, rename, func(n uint64) {
		fmt.Fprintf(stderr, "\rcopying: %d of %d events (%d%%)", n, total, 100*n/max(total, 1))
	})
	fmt.Fprintln(stderr)
	if err == nil {
		fmt.Fprintf(stderr, "verifying the copy against the log...\n")
		var compared uint64
		compared, err = ring.VerifyCopy(ctx, old, copyStore, rename)
		if err == nil && compared != copied {
			err = fmt.Errorf("copied %d events but compared %d", copied, compared)
		}
	}
	err = errors.Join(err, copyStore.Close())
	if err != nil {
		return fmt.Errorf("%w; the log is unchanged (run it again)", err)
	}
	if err := old.Close(); err != nil {
		return err
	}
	plainDir := filepath.Join(data, "events.plain")
	if err := os.Rename(oldDir, plainDir); err != nil {
		return err
	}
	if err := os.Rename(newDir, oldDir); err != nil {
		return fmt.Errorf("%w: the old log is in %s, the sealed copy in %s: rename the copy to %s", err, plainDir, newDir, oldDir)
	}
	if err := fsutil.SyncDir(data); err != nil {
		return err
	}
	if !keepPlain {
		if err := os.RemoveAll(plainDir); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "sealed %d events; %s now holds no personal value in plain text\n", copied, oldDir)
	if keepPlain {
		fmt.Fprintf(stdout, "the old log, with personal data in plain text, is in %s: delete it once satisfied\n", plainDir)
	}
	return nil
}

// legacyLoginStream matches a reservation stream named by its login
// ("login-{provider}-{login}"), as versions before sealing named them;
// hashed names are "login-{provider}-h" and 32 hex digits.
var (
	legacyLoginStream = regexp.MustCompile(`^login-(\d+)-(.+)$`)
	hashedLoginStream = regexp.MustCompile(`^login-\d+-h[0-9a-f]{32}$`)
)

// legacyLoginRename renames a legacy login stream to
// "login-{provider}-legacy-h{hash}": no login in the name, and apart from
// the streams logins are reserved in now (a login is kept unique against
// accounts of older versions by the read model).
func legacyLoginRename(nameKey []byte) func(string) string {
	return func(stream string) string {
		m := legacyLoginStream.FindStringSubmatch(stream)
		if m == nil || hashedLoginStream.MatchString(stream) {
			return stream
		}
		provider, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return stream
		}
		hashed := app.HashedLoginStream(nameKey, provider, m[2])
		return "login-" + m[1] + "-legacy-" + hashed[len("login-"+m[1]+"-"):]
	}
}
