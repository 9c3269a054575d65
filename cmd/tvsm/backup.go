package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"tvsm/internal/platform/backup"
	"tvsm/internal/tools/restore"
	"tvsm/internal/tools/simulate"
	"tvsm/internal/wiring/node"
)

// backupUsage heads `tvsm backup -h`.
const backupUsage = `Usage: tvsm backup --to DIR [--since EARLIER] [flags]
       tvsm backup verify DIR [DIR2 ...]

Backs up a running node on the embedded event store while it serves: the
node copies its event store as of one log position (every write it
acknowledged before the backup began is in it), its subjects' key file and
its snapshots, and this command copies them into DIR, checking each file's
SHA-256, and writes DIR/manifest.json last. A directory without a manifest
is not a backup (a backup cut short leaves one). The master key is not
copied unless --include-keys is given; the manifest says where it is.

With --since EARLIER (an earlier backup's directory or its manifest.json)
the backup is incremental: it copies only what the node's log gained since
that one (new sstables, the new end of the commit log) and names EARLIER as
its parent. Restoring it takes the whole chain: the full backup, then each
incremental one, oldest first. The node refuses a --since backup of another
log. The node hashes and the command copies at --rate MiB/s (0: no limit),
so that the node's writes go on at near their rate.

tvsm backup verify DIR checks every file against the manifest and reads the
whole copied log; it exits 0 only when all holds. Of an incremental backup
alone it checks its own files and says which backup it needs; give the
chain (verify FULL INCR1 INCR2 ...) to read its log through.

A node on EventStoreDB does not own its log: back EventStoreDB up by its
own procedure (docs/operations.md).

The superadmin's password comes from TVSM_ADMIN_PASSWORD or --password-file.

Flags:
`

// restoreUsage heads `tvsm restore -h`.
const restoreUsage = `Usage: tvsm restore DIR [DIR2 ...] --data NEWDIR [flags]

Verifies the backup in DIR and lays it out as the data directory NEWDIR,
which must not exist or be empty; then start a node on it (tvsm serve
--data NEWDIR). For an incremental backup give its chain, oldest first: the
full backup, then each one made --since the one before; the node then
serves the state of the last. A chain with a backup missing, out of order
or not the one the next was made since is refused before anything is
written. A master key the backup holds goes to NEWDIR.master-key (or
--master-key-file); otherwise give the node the key the manifest names.

Flags:
`

// backupOptions are the flags of `tvsm backup`.
type backupOptions struct {
	url, user, passwordFile, to, since string
	includeKeys                        bool
	rate                               int64 // bytes/s, 0 for no limit
}

// backupCmd runs `tvsm backup` and `tvsm backup verify`.
func backupCmd(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "verify" {
		return backupVerifyCmd(args[1:], stdout, stderr)
	}
	var o backupOptions
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage); fs.PrintDefaults() }
	user, ok := lookupEnv("TVSM_ADMIN_LOGIN")
	if !ok || user == "" {
		user = node.DefaultAdminLogin
	}
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "base `URL` of the node (its own address, not a load balancer's)")
	fs.StringVar(&o.user, "user", user, "`login` of a superadmin (default TVSM_ADMIN_LOGIN, else admin)")
	fs.StringVar(&o.passwordFile, "password-file", "", "read the superadmin's password from `file` (its first line) instead of TVSM_ADMIN_PASSWORD")
	fs.StringVar(&o.to, "to", "", "`directory` to write the backup to (new or empty)")
	fs.BoolVar(&o.includeKeys, "include-keys", false, "copy the master key into the backup too (keep such a backup as safe as the key)")
	fs.StringVar(&o.since, "since", "", "make an incremental backup since the backup in `EARLIER` (its directory or manifest.json)")
	rate := fs.Int64("rate", backup.DefaultRate>>20, "hash and copy at most `MiB/s` (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rate < 0 {
		return &configError{fmt.Errorf("--rate %d: give MiB/s, 0 for no limit", *rate)}
	}
	o.rate = *rate << 20
	switch {
	case fs.NArg() > 0:
		return &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	case o.to == "":
		return &configError{errors.New("--to DIR is required")}
	}
	if err := emptyDir(o.to); err != nil {
		return &configError{err}
	}
	var since *backup.Since
	if o.since != "" {
		m, sum, err := backup.ReadManifestSum(o.since)
		if err != nil {
			return &configError{fmt.Errorf("--since: %w", err)}
		}
		since = backup.SinceOf(m, sum)
	}
	password, err := rebuildPassword(o.passwordFile, lookupEnv)
	if err != nil {
		return &configError{err}
	}
	c := backupClient{AdminClient: simulate.AdminClient{URL: strings.TrimRight(o.url, "/"), User: o.user, Password: password,
		HTTP: &http.Client{}}}
	return c.backup(ctx, o, since, stdout)
}

// backupClient copies a staged backup out of a node.
type backupClient struct {
	simulate.AdminClient
}

func (c backupClient) backup(ctx context.Context, o backupOptions, since *backup.Since, w io.Writer) (err error) {
	if err := os.MkdirAll(o.to, 0o700); err != nil {
		return err
	}
	started := time.Now()
	var m backup.Manifest
	// The body is always sent, as JSON: the node answers 415 to a POST
	// without it.
	body := map[string]any{"include_master_key": o.includeKeys}
	if since != nil {
		body["since"] = sinceBody(since)
	}
	if err := c.Call(ctx, http.MethodPost, "/api/admin/backups", body, &m); err != nil {
		return err
	}
	defer func() {
		// The node drops the staged copy; it would expire anyway.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if derr := c.Call(dctx, http.MethodDelete, "/api/admin/backups/"+url.PathEscape(m.ID), nil, nil); derr != nil && err == nil {
			fmt.Fprintf(w, "warning: the node kept its staged copy (it removes it after a while): %v\n", derr)
		}
		if err != nil {
			err = fmt.Errorf("%w (%s holds an incomplete copy and no manifest: remove it)", err, o.to)
		}
	}()
	if err := m.CheckPaths(); err != nil {
		return err
	}
	if since != nil && (m.Parent == nil || m.Parent.ID != since.ID || m.Parent.ManifestSHA256 != since.ManifestSHA256) {
		return errors.New("the node staged a backup that is not made since the one given to --since (a node of an older version?)")
	}
	staged := time.Since(started)
	show := newCopyProgress(w, m)
	pace := backup.NewPacer(o.rate)
	for _, f := range m.Files {
		if size, _ := f.Stored(); size == 0 && f.InParent {
			continue
		}
		if err := c.download(ctx, m.ID, f, o.to, show, pace); err != nil {
			show.end()
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	show.end()
	if err := syncDirs(o.to); err != nil {
		return err
	}
	if err := backup.WriteManifest(o.to, m); err != nil {
		return err
	}
	kind := "backup"
	if m.Parent != nil {
		kind = fmt.Sprintf("incremental backup (%.1f of %.1f MiB copied, the rest in %s) since position %d",
			float64(m.StoredSize())/(1<<20), float64(m.TotalSize())/(1<<20), o.since, m.Parent.Position)
	}
	fmt.Fprintf(w, "%s of position %d (%d events, %d files, %.1f MiB) written to %s in %v (the node staged it in %v)\n",
		kind, m.Position, m.Events, len(m.Files), float64(m.TotalSize())/(1<<20), o.to,
		time.Since(started).Round(time.Millisecond), staged.Round(time.Millisecond))
	fmt.Fprintln(w, masterKeySentence(m))
	return nil
}

// sinceBody is the description of the backup since which one is made, as
// POST /api/admin/backups takes it.
func sinceBody(s *backup.Since) map[string]any {
	files := make([]map[string]any, len(s.Files))
	for i, f := range s.Files {
		files[i] = map[string]any{"path": f.Path, "size": f.Size, "sha256": f.SHA256}
	}
	body := map[string]any{"id": s.ID, "position": s.Position, "manifest_sha256": s.ManifestSHA256, "files": files}
	if s.LastEventID != "" {
		body["last_event_id"] = s.LastEventID
	}
	return body
}

// download copies the bytes the backup holds of one file of the staged
// backup id into dir, at pace, checking their size and SHA-256 against the
// manifest, and syncs it.
func (c backupClient) download(ctx context.Context, id string, f backup.File, dir string, show *copyProgress, pace *backup.Pacer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		c.URL+"/api/admin/backups/"+url.PathEscape(id)+"/file?"+url.Values{"path": {f.Path}}.Encode(), nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(c.User, c.Password)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	path := filepath.Join(dir, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := pace.Copy(io.MultiWriter(out, h, show), resp.Body, out)
	if err = errors.Join(err, out.Close()); err != nil {
		return err
	}
	size, sum := f.Stored()
	switch {
	case n != size:
		return fmt.Errorf("received %d bytes, the manifest says %d", n, size)
	case hex.EncodeToString(h.Sum(nil)) != sum:
		return errors.New("what was received does not match its SHA-256 in the manifest")
	}
	return nil
}

// backupVerifyCmd runs `tvsm backup verify DIR`.
func backupVerifyCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backupUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &configError{errors.New("verify what? give the backup's directory: tvsm backup verify DIR (or a chain, oldest first)")}
	}
	if fs.NArg() > 1 {
		m, err := restore.VerifyChain(fs.Args())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: a complete chain of %d backups through position %d (%d events): every file matches its manifest and the log put together reads through\n",
			strings.Join(fs.Args(), " "), fs.NArg(), m.Position, m.Events)
		return nil
	}
	dir := fs.Arg(0)
	m, err := restore.Verify(dir)
	if err != nil {
		return err
	}
	if m.Parent != nil {
		fmt.Fprintf(stdout, "%s: an incremental backup of position %d (%d events) whose own files match the manifest; it was made since backup %s (position %d): "+
			"its log reads only with that chain, verify it whole: tvsm backup verify FULL ... %s\n",
			dir, m.Position, m.Events, m.Parent.ID, m.Parent.Position, dir)
		return nil
	}
	fmt.Fprintf(stdout, "%s: a complete backup of position %d (%d events, %d files, taken %s by tvsm %s): every file matches the manifest and the log reads through\n",
		dir, m.Position, m.Events, len(m.Files), m.Created.Format(time.RFC3339), m.TvsmVersion)
	return nil
}

// restoreCmd runs `tvsm restore DIR --data NEWDIR`.
func restoreCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, restoreUsage); fs.PrintDefaults() }
	var data, masterKey string
	fs.StringVar(&data, "data", "", "the new data `directory` (must not exist or be empty)")
	fs.StringVar(&masterKey, "master-key-file", "", "where a master key the backup holds goes (default NEWDIR.master-key)")
	// The backups' directories may come before or after the flags.
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		dirs, args = append(dirs, args[0]), args[1:]
	}
	switch {
	case len(dirs) == 0:
		return &configError{errors.New("restore what? give the backup's directory: tvsm restore DIR --data NEWDIR")}
	case data == "":
		return &configError{errors.New("--data NEWDIR is required")}
	}
	if masterKey == "" {
		masterKey = node.DefaultMasterKeyFile(data)
	}
	m, err := restore.IntoChain(dirs, data, masterKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored the backup of position %d (%d events) into %s; start a node on it: tvsm serve --data %s\n",
		m.Position, m.Events, data, data)
	if m.MasterKey.Included {
		fmt.Fprintf(stdout, "the master key (fingerprint %s) is in %s\n", m.MasterKey.Fingerprint, masterKey)
	} else {
		fmt.Fprintln(stdout, masterKeySentence(m)+"; a node started without it reads nothing personal")
	}
	return nil
}

// masterKeySentence says where the master key of m is.
func masterKeySentence(m backup.Manifest) string {
	if m.MasterKey.Included {
		return fmt.Sprintf("the master key (fingerprint %s) is in the backup: keep it as safe as the key", m.MasterKey.Fingerprint)
	}
	return fmt.Sprintf("the master key (fingerprint %s) is not in the backup: the node read it from %s", m.MasterKey.Fingerprint, m.MasterKey.Location)
}

// emptyDir refuses a directory that holds anything; a missing one is
// made later.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty; give a new directory", dir)
	}
	return nil
}

// syncDirs makes the entries of dir and of every directory below it
// durable.
func syncDirs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		return errors.Join(f.Sync(), f.Close())
	})
}

// copyProgress draws the bytes copied: a progress bar on a terminal, a
// plain line every few seconds otherwise.
type copyProgress struct {
	w        io.Writer
	bar      *progressbar.ProgressBar
	total    int64
	done     int64
	lastLine time.Time
}

func newCopyProgress(w io.Writer, m backup.Manifest) *copyProgress {
	p := &copyProgress{w: w, total: m.StoredSize(), lastLine: time.Now()}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions64(p.total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(fmt.Sprintf("backup of position %d", m.Position)),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetWidth(30))
		return p
	}
	files := 0
	for _, f := range m.Files {
		if !f.InParent {
			files++
		}
	}
	fmt.Fprintf(w, "backup %s of position %d (%d events) staged; copying %d files, %.1f MiB\n",
		m.ID, m.Position, m.Events, files, float64(p.total)/(1<<20))
	return p
}

// Write counts n copied bytes.
func (p *copyProgress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.bar != nil {
		_ = p.bar.Add(len(b))
	} else if time.Since(p.lastLine) >= 2*time.Second {
		p.lastLine = time.Now()
		fmt.Fprintf(p.w, "copied %.1f of %.1f MiB\n", float64(p.done)/(1<<20), float64(p.total)/(1<<20))
	}
	return len(b), nil
}

func (p *copyProgress) end() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
