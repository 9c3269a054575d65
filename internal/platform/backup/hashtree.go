package backup

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// HashTree lists every file under dir (a staged backup) with its size and
// SHA-256, by its slash-separated path relative to dir, in path order,
// reading at pace. With the files of an earlier backup (since), an
// sstable of the same path and size is left to it unread (InParent), and
// a file whose first bytes are the earlier one's of the same path, as
// their SHA-256 shows, keeps only the rest in dir (ParentPrefix).
//
// cache (nil for none) lets it read only the new end of a growing file
// whose start it hashed for an earlier backup.
func HashTree(ctx context.Context, dir string, since []File, pace *Pacer, cache *HashCache) ([]File, error) {
	earlier := make(map[string]File, len(since))
	for _, f := range since {
		earlier[f.Path] = f
	}
	var files []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := hashFile(p, rel, earlier, pace, cache)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	slices.SortFunc(files, func(a, b File) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return files, err
}

// HashCache remembers, for the files of the event store's copy that only
// grow under their name (commit log segments), the SHA-256 state of what a node staged of them last: a backup made since
// that one then reads only what they gained. It holds for one process: a
// segment's name is reused only after a clean restart, which starts with
// an empty cache. Safe for concurrent use; a nil cache remembers nothing.
type HashCache struct {
	mu sync.Mutex
	m  map[string]hashState
}

type hashState struct {
	size  int64
	sum   string
	state []byte // the SHA-256 state after size bytes
}

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache { return &HashCache{m: map[string]hashState{}} }

// growing reports whether the staged file at rel is a prefix of what the
// same name holds at the next backup: a commit log segment, copied up to
// its fsynced end, which only grows under its name. (Pebble's MANIFEST
// grows too, but its checkpoint rewrites it record by record: its copy is
// compared by the SHA-256 of its first bytes instead.)
func growing(rel string) bool {
	dir, name := path.Split(rel)
	return dir == EventsDir+"/commitlog/" && strings.HasSuffix(name, ".seg")
}

// resume returns a hash of the first prev.Size bytes of the file at rel
// when the cache knows them as prev's.
func (c *HashCache) resume(rel string, prev File) hash.Hash {
	if c == nil || !growing(rel) {
		return nil
	}
	c.mu.Lock()
	st, ok := c.m[rel]
	c.mu.Unlock()
	if !ok || st.size != prev.Size || st.sum != prev.SHA256 {
		return nil
	}
	h := sha256.New()
	if h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state) != nil {
		return nil
	}
	return h
}

// remember notes the state of h, the hash of the whole file at rel.
func (c *HashCache) remember(rel string, size int64, h hash.Hash) {
	if c == nil || !growing(rel) {
		return
	}
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return
	}
	c.mu.Lock()
	c.m[rel] = hashState{size: size, sum: hex.EncodeToString(h.Sum(nil)), state: state}
	c.mu.Unlock()
}

// hashFile describes the staged file at p (rel in the backup) against the
// earlier backup's files.
func hashFile(p, rel string, earlier map[string]File, pace *Pacer, cache *HashCache) (File, error) {
	info, err := os.Stat(p)
	if err != nil {
		return File{}, err
	}
	prev, had := earlier[rel]
	if had && prev.Size == info.Size() && strings.HasPrefix(rel, EventsDir+"/") && strings.HasSuffix(rel, ".sst") {
		return File{Path: rel, Size: prev.Size, SHA256: prev.SHA256, InParent: true}, nil
	}
	src, err := os.Open(p)
	if err != nil {
		return File{}, err
	}
	defer src.Close()
	whole := sha256.New()
	if !had || prev.Size == 0 || prev.Size > info.Size() {
		return hashWhole(src, rel, whole, pace, cache)
	}
	if h := cache.resume(rel, prev); h != nil {
		whole = h
		if _, err := src.Seek(prev.Size, io.SeekStart); err != nil {
			return File{}, err
		}
	} else {
		if _, err := pace.Copy(whole, io.LimitReader(src, prev.Size), nil); err != nil {
			return File{}, err
		}
		if hex.EncodeToString(whole.Sum(nil)) != prev.SHA256 {
			if _, err := src.Seek(0, io.SeekStart); err != nil {
				return File{}, err
			}
			return hashWhole(src, rel, sha256.New(), pace, cache)
		}
	}
	// The first bytes are the earlier backup's: the rest replaces the file.
	tail := sha256.New()
	tmp := p + ".tail"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return File{}, err
	}
	n, err := pace.Copy(io.MultiWriter(dst, tail, whole), src, nil)
	if err = errors.Join(err, dst.Close()); err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		return File{}, errors.Join(err, os.Remove(tmp))
	}
	cache.remember(rel, prev.Size+n, whole)
	return File{Path: rel, Size: prev.Size + n, SHA256: hex.EncodeToString(whole.Sum(nil)),
		ParentPrefix: prev.Size, TailSHA256: hex.EncodeToString(tail.Sum(nil))}, nil
}

// hashWhole hashes the rest of src into h, the file at rel.
func hashWhole(src *os.File, rel string, h hash.Hash, pace *Pacer, cache *HashCache) (File, error) {
	n, err := pace.Copy(h, src, nil)
	if err != nil {
		return File{}, err
	}
	cache.remember(rel, n, h)
	return File{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
