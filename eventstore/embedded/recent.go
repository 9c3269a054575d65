package embedded

import (
	"bytes"
	"errors"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Appends look up event ids and streams that almost never exist. A
// pebble Get of an absent key walks the memtable's skiplist, which costs
// several µs once the memtable holds a few hundred thousand keys (cache
// misses), while the sstables answer absent keys from bloom filters. So the
// committer remembers, in bloom filters of its own, every id, head and first
// stream index key it has written since Open that may still be in a
// memtable: a key they rule out can only be in the sstables, which an
// iterator that skips the memtables (OnlyReadGuaranteedDurable) reads. Open flushes the memtables
// replayed from the commit log, so that every key in a memtable was written by the
// committer. Once the filters grow past recentGenKeys, the committer starts a
// new one and asks pebble to flush; when that flush is done, the keys of the
// older filters are in sstables and those filters are dropped.
const (
	recentGenKeys = 1 << 20
	bloomBitsKey  = 10 // bits per key: about 1% false positives with 7 probes in 512-bit blocks
	bloomProbes   = 7
)

// recentKeys is written by the committer and read by every lookup. A key is
// added before the batch holding it is committed, so a reader that could see
// the key in pebble also sees it in the filters.
type recentKeys struct {
	seed    maphash.Seed
	genKeys int // keys per filter before a new one and a flush
	mu      sync.RWMutex
	gens    []*bloomGen // oldest first; the last one takes new keys
	// Committer only: flushed is closed when the flush started after
	// gens[:covered] were complete has finished; nil when none is in flight.
	flushed <-chan struct{}
	covered int
	dropped atomic.Int64 // filters dropped after their flush (tests)
}

func newRecentKeys(genKeys int) *recentKeys {
	if genKeys <= 0 {
		genKeys = recentGenKeys
	}
	return &recentKeys{seed: maphash.MakeSeed(), genKeys: genKeys, gens: []*bloomGen{newBloomGen(genKeys)}}
}

func (r *recentKeys) add(key []byte) {
	h := maphash.Bytes(r.seed, key)
	r.mu.Lock()
	r.gens[len(r.gens)-1].add(h)
	r.mu.Unlock()
}

// mayHave reports whether key may have been written since the last flush
// that the filters know of; false means it is in no memtable.
func (r *recentKeys) mayHave(key []byte) bool {
	h := maphash.Bytes(r.seed, key)
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, g := range r.gens {
		if g.has(h) {
			return true
		}
	}
	return false
}

// maintainRecent drops the filters a finished flush has made useless and,
// when the newest filter is full, starts a new one and a flush. The
// committer calls it between groups, after the group's batch is committed.
func (s *Store) maintainRecent() {
	r := s.recent
	if r.flushed != nil {
		select {
		case <-r.flushed:
			r.mu.Lock()
			r.gens = append([]*bloomGen(nil), r.gens[r.covered:]...)
			r.mu.Unlock()
			r.dropped.Add(int64(r.covered))
			s.lsmGen.Add(1) // the committer's iterator must see the flushed keys
			r.flushed, r.covered = nil, 0
		default:
		}
	}
	r.mu.RLock()
	full := r.gens[len(r.gens)-1].n >= r.genKeys
	r.mu.RUnlock()
	if r.flushed != nil || !full {
		return
	}
	flushed, err := s.db.AsyncFlush()
	if err != nil {
		s.log.Warn("event store: flush to bound the key filters failed", "err", err)
		return
	}
	r.mu.Lock()
	r.covered, r.flushed = len(r.gens), flushed
	r.gens = append(r.gens, newBloomGen(r.genKeys))
	r.mu.Unlock()
}

// getIndexed is db.Get for an id, head or first stream index key. The value is copied: it
// stays valid. own is the committer's reusable sstable iterator; other
// goroutines pass nil and get a fresh one.
func (s *Store) getIndexed(key []byte, own *durableIter) ([]byte, error) {
	if s.recent.mayHave(key) {
		v, closer, err := s.db.Get(key)
		if err != nil {
			return nil, err
		}
		defer closer.Close()
		return bytes.Clone(v), nil
	}
	var it *pebble.Iterator
	var err error
	if own != nil {
		it, err = own.get(s)
	} else {
		it, err = s.db.NewIter(durableOnly)
		if it != nil {
			defer it.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	if !it.SeekPrefixGE(key) || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return nil, err
		}
		return nil, pebble.ErrNotFound
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(v), nil
}

var durableOnly = &pebble.IterOptions{OnlyReadGuaranteedDurable: true}

// durableIter is the committer's iterator over the sstables, kept across
// lookups because creating one costs more than the lookup. Its view is
// fixed when it is made, which is enough for keys the filters rule out: those
// were in the sstables when Open made its first iterator or reached them by
// the flush before a filter was dropped, after which the view is renewed.
// It is also renewed after every flush and compaction pebble reports, so
// that it pins no memtable or obsolete table for long.
type durableIter struct {
	it  *pebble.Iterator
	gen uint64 // lsmGen it was made at
}

func (d *durableIter) get(s *Store) (*pebble.Iterator, error) {
	gen := s.lsmGen.Load()
	if d.it != nil && d.gen == gen {
		return d.it, nil
	}
	d.close()
	it, err := s.db.NewIter(durableOnly)
	if err != nil {
		return nil, err
	}
	d.it, d.gen = it, gen
	return it, nil
}

func (d *durableIter) close() {
	if d.it != nil {
		_ = d.it.Close()
		d.it = nil
	}
}

func isNotFound(err error) bool { return errors.Is(err, pebble.ErrNotFound) }

// bloomGen is a fixed-size blocked bloom filter over 64-bit hashes: a key's
// probes all fall in one 512-bit block (a cache line), chosen by the hash's
// high bits. A plain bloom filter put each of its 7 probes in a random
// cache line of a 1.25 MiB filter, and every account create adds 4 keys and
// looks up 4: blocking makes that one cache miss per key instead of seven,
// and the block comes from a multiplication instead of seven divisions. The
// false-positive rate stays about 1% (bloom_test.go measures it); a false
// positive costs one pebble Get.
type bloomGen struct {
	blocks [][8]uint64
	n      int // keys added
}

func newBloomGen(keys int) *bloomGen {
	return &bloomGen{blocks: make([][8]uint64, max(1, keys*bloomBitsKey/512))}
}

// probe returns h's block and the hash its bit positions come from, 9 bits
// per probe: independent of the block choice, which uses h's high bits.
func (b *bloomGen) probe(h uint64) (*[8]uint64, uint64) {
	i, _ := bits.Mul64(h, uint64(len(b.blocks)))
	return &b.blocks[i], h * 0x9e3779b97f4a7c15
}

func (b *bloomGen) add(h uint64) {
	blk, p := b.probe(h)
	for range bloomProbes {
		bit := p & 511
		blk[bit/64] |= 1 << (bit % 64)
		p >>= 9
	}
	b.n++
}

func (b *bloomGen) has(h uint64) bool {
	blk, p := b.probe(h)
	for range bloomProbes {
		bit := p & 511
		if blk[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
		p >>= 9
	}
	return true
}
