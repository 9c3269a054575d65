package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"time"
)

// DefaultRate is the bytes per second a backup hashes and copies at by
// default. Unpaced, the hashing and the synced copy of a million events
// (about 300 MiB) took the appends beside them down to a third of their
// rate on 2 cores: the copy's writeback queued the commit log's fsyncs
// behind it. At this rate a backup of that size takes a few seconds more.
const DefaultRate = 64 << 20

// chunk is what a paced copy reads and writes at a time; syncEvery how
// much it writes between fsyncs, so that the disk never has a long queue
// of the copy's pages in front of the log's fsync.
const (
	chunk     = 1 << 20
	syncEvery = 8 << 20
)

// Pacer spreads work over time: Wait(n) returns once n more bytes fit in
// rate bytes per second since the pacer began. A nil Pacer or a rate of 0
// never waits.
type Pacer struct {
	rate    float64
	started time.Time
	done    float64
}

// NewPacer returns a pacer of rate bytes per second; 0 or less is no limit.
func NewPacer(rate int64) *Pacer {
	if rate <= 0 {
		return nil
	}
	return &Pacer{rate: float64(rate), started: time.Now()}
}

// Wait accounts for n bytes and sleeps until they are within the rate.
func (p *Pacer) Wait(n int) {
	if p == nil {
		return
	}
	p.done += float64(n)
	due := p.started.Add(time.Duration(p.done / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	} else if -d > time.Second {
		p.started, p.done = time.Now(), 0 // no burst to catch up after a slow stretch
	}
}

// Copy copies src to dst through p in chunks. When f is not nil (the file
// dst writes to), it is synced every few MiB and at the end.
func (p *Pacer) Copy(dst io.Writer, src io.Reader, f *os.File) (int64, error) {
	buf := make([]byte, chunk)
	var n, unsynced int64
	for {
		k, rerr := io.ReadFull(src, buf)
		if k > 0 {
			p.Wait(k)
			if _, err := dst.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
			if unsynced += int64(k); f != nil && unsynced >= syncEvery {
				if err := f.Sync(); err != nil {
					return n, err
				}
				unsynced = 0
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			if f != nil {
				return n, f.Sync()
			}
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// HashFilePaced is HashFile through p.
func HashFilePaced(path string, p *Pacer) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := p.Copy(h, f, nil)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
