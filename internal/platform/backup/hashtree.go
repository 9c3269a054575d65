package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HashTree lists every file under dir (a staged backup) with its size and
// SHA-256, by its slash-separated path relative to dir, in path order,
// reading at pace. With the files of an earlier backup (since), an
// sstable of the same path and size is left to it unread (InParent), and
// a file whose first bytes are the earlier one's of the same path, as
// their SHA-256 shows, keeps only the rest in dir (ParentPrefix).
func HashTree(ctx context.Context, dir string, since []File, pace *Pacer) ([]File, error) {
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
		f, err := hashFile(p, rel, earlier, pace)
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

// hashFile describes the staged file at p (rel in the backup) against the
// earlier backup's files.
func hashFile(p, rel string, earlier map[string]File, pace *Pacer) (File, error) {
	info, err := os.Stat(p)
	if err != nil {
		return File{}, err
	}
	prev, had := earlier[rel]
	if had && prev.Size == info.Size() && strings.HasPrefix(rel, EventsDir+"/") && strings.HasSuffix(rel, ".sst") {
		return File{Path: rel, Size: prev.Size, SHA256: prev.SHA256, InParent: true}, nil
	}
	if !had || prev.Size == 0 || prev.Size > info.Size() {
		size, sum, err := HashFilePaced(p, pace)
		return File{Path: rel, Size: size, SHA256: sum}, err
	}
	src, err := os.Open(p)
	if err != nil {
		return File{}, err
	}
	defer src.Close()
	whole := sha256.New()
	if _, err := pace.Copy(whole, io.LimitReader(src, prev.Size), nil); err != nil {
		return File{}, err
	}
	if hex.EncodeToString(whole.Sum(nil)) != prev.SHA256 {
		size, sum, err := HashFilePaced(p, pace)
		return File{Path: rel, Size: size, SHA256: sum}, err
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
	return File{Path: rel, Size: prev.Size + n, SHA256: hex.EncodeToString(whole.Sum(nil)),
		ParentPrefix: prev.Size, TailSHA256: hex.EncodeToString(tail.Sum(nil))}, nil
}
