package readmodel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"tvsm/projections"
)

// Payload of a read-model snapshot (inside projections' snapshot file,
// which adds the position, length and checksum). Integers are varints
// (zig-zag for signed values), strings a uvarint length and the bytes:
//
//	magic "TVSMRM" | format uvarint
//	catalog: uvarint length | JSON of snapCatalog
//	counts: accounts, subscriptions, devices (uvarints; for pre-sizing)
//	providers of the accounts: count | each provider (varint), its accounts (uvarint)
//	accounts, in ascending id order, each:
//	    id, provider, created, updated, region (varint) | rev, flags (uvarint) | limit (varint) | data (string)
//	    subscriptions: count | each id, tariff, start, start ns, stop, stop ns, device, time shift (varints)
//	    devices: count | each id, created, first, last, device type (varint) | class, flags (byte) | text (string)
//	tombstones: count | each id (varint), rev (uvarint), provider (varint), deleted at (varint), erased (byte)
//	authorisation drops of providers, accounts, devices: three times count | each id (varint), commit position (uvarint)
//	end: magic "END"
//
// Format 5 added when each deleted account was deleted, and whether it was
// erased (what retention needs); format 6 is format 5 with the personal
// text sealed (SealSnapshots): an
// account's data and each device's text are sealed blobs (empty: the
// subscriber was erased), and the account networks leave the catalog for
// a section of their own after it:
//
//	networks: count | each provider (varint), rev (uvarint), count | each id, account (varint), sealed JSON of network and description (bytes)
//
// Older formats are refused (the node replays the log). Format 2 added the
// authorisation state; a format 1 snapshot was taken
// without the command streams, so it cannot be completed from the log's
// tail and is refused (the node replays the whole log). Format 3 added
// the TVIP fields (updated, region ids, device subscriptions, the
// provider's device fields, device logins) and the account networks; a
// format 2 snapshot lacks what it did not keep, so it is refused too.
const (
	snapMagic    = "TVSMRM"
	snapFormat   = 5
	sealedFormat = 6
	snapEnd      = "END"
	flushAt      = 64 << 10
	maxSnapText  = 1 << 24 // no string in a snapshot is longer
	maxSnapItems = 1 << 20 // no account has more subscriptions or devices
)

// errSnapshotFormat reports a payload this version cannot read. It wraps
// projections.ErrCorruptSnapshot: the caller's remedy is the same (start
// empty, replay the log).
var errSnapshotFormat = fmt.Errorf("%w: read model payload", projections.ErrCorruptSnapshot)

// encode writes the capture's payload to w.
func (c *capture) encode(w io.Writer) error {
	e := &encoder{w: w, buf: make([]byte, 0, flushAt+4096), sealer: c.sealer}
	e.raw(snapMagic)
	catalog := c.catalog
	if c.sealer != nil {
		e.uvarint(sealedFormat)
		catalog.Networks = nil
	} else {
		e.uvarint(snapFormat)
	}
	cat, err := json.Marshal(catalog)
	if err != nil {
		return fmt.Errorf("encode catalog: %w", err)
	}
	e.bytes(cat)
	if c.sealer != nil {
		e.networks(c.catalog.Networks)
	}
	e.uvarint(uint64(len(c.accounts)))
	e.uvarint(uint64(c.subs))
	e.uvarint(uint64(c.devs))
	e.uvarint(uint64(len(c.perProvider)))
	for _, p := range c.perProvider {
		e.varint(p.id)
		e.uvarint(uint64(p.accounts))
	}
	for _, a := range c.accounts {
		e.account(a)
		if e.err != nil {
			return e.err
		}
		if err := e.maybeFlush(); err != nil {
			return err
		}
	}
	e.uvarint(uint64(len(c.deleted)))
	for _, t := range c.deleted {
		e.varint(t.id)
		e.uvarint(t.rev)
		e.varint(t.provider)
		e.varint(t.at.Unix())
		erased := byte(0)
		if t.erased {
			erased = 1
		}
		e.buf = append(e.buf, erased)
	}
	for _, l := range c.drops {
		e.uvarint(uint64(len(l)))
		for _, x := range l {
			e.varint(x.id)
			e.uvarint(uint64(x.v))
		}
	}
	e.raw(snapEnd)
	return e.flush()
}

// encoder buffers a payload.
type encoder struct {
	w      io.Writer
	buf    []byte
	sealer TextSealer // nil: text is written plain
	err    error      // the first sealing failure
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) raw(s string)     { e.buf = append(e.buf, s...) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.buf = append(e.buf, b...) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }

func (e *encoder) account(a *account) {
	e.varint(a.id)
	e.varint(a.provider)
	e.varint(a.created.Unix())
	e.varint(a.updated.Unix())
	e.varint(a.region)
	e.uvarint(a.rev)
	e.uvarint(uint64(a.flags))
	e.varint(int64(a.limit))
	e.text(a.id, accountText, a.data)
	e.uvarint(uint64(len(a.subs)))
	for _, s := range a.subs {
		e.varint(s.id)
		e.varint(s.tariff)
		e.varint(s.start)
		e.varint(int64(s.startNs))
		e.varint(s.stop)
		e.varint(int64(s.stopNs))
		e.varint(s.device)
		e.varint(int64(s.timeShift))
	}
	e.uvarint(uint64(len(a.devs)))
	for i := range a.devs {
		d := &a.devs[i]
		e.varint(d.id)
		e.varint(d.created.Unix())
		e.varint(d.first.Unix())
		e.varint(d.last.Unix())
		e.varint(d.deviceType)
		e.buf = append(e.buf, d.class, d.flags)
		e.text(a.id, deviceText(d.id), d.text)
	}
}

func (e *encoder) maybeFlush() error {
	if len(e.buf) < flushAt {
		return nil
	}
	return e.flush()
}

func (e *encoder) flush() error {
	_, err := e.w.Write(e.buf)
	e.buf = e.buf[:0]
	return err
}

// decodeState reads a payload written by capture.encode into a new state.
//
// Loading a million accounts is bound by memory latency (every index is a
// map the size of the data), so it runs on three goroutines: this one
// parses the payload into records, in batches; one indexes the records
// (account map, id lists, logins), one their subscriptions and devices.
func decodeState(r io.Reader, sealer TextSealer) (*state, error) {
	d := &decoder{r: r, buf: make([]byte, 0, 256<<10)}
	if magic := d.fixed(len(snapMagic)); d.err == nil && magic != snapMagic {
		return nil, fmt.Errorf("%w: bad magic %q", errSnapshotFormat, magic)
	}
	switch v := d.uvarint(); {
	case d.err != nil:
	case v == sealedFormat && sealer == nil:
		return nil, fmt.Errorf("%w: format %d holds sealed text and no keys were given", errSnapshotFormat, v)
	case v == sealedFormat:
		d.sealer = sealer
	case v != snapFormat:
		return nil, fmt.Errorf("%w: format %d, this version reads %d and %d", errSnapshotFormat, v, snapFormat, sealedFormat)
	}
	var cat snapCatalog
	if raw := d.bytes(); d.err == nil {
		if err := json.Unmarshal(raw, &cat); err != nil {
			return nil, fmt.Errorf("%w: catalog: %w", errSnapshotFormat, err)
		}
	}
	if d.sealer != nil {
		cat.Networks = d.networks()
	}
	nAcc, nSubs, nDevs := d.count(), d.count(), d.count()
	s := newStateSized(sizeHint(nSubs), sizeHint(nDevs))
	for n := d.count(); n > 0 && d.err == nil; n-- {
		p, accounts := d.varint(), d.count()
		if d.err == nil {
			s.prov(p).logins = make(map[string]int64, sizeHint(accounts))
		}
	}
	if d.err != nil {
		return nil, d.fail()
	}
	restoreCatalog(s, &cat)

	// The indexers only read s.byProv, which is complete: an account of a
	// provider not listed above is an error.
	records, items := make(chan []*account, 16), make(chan []*account, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		for batch := range records {
			for _, a := range batch {
				s.indexRecord(nil, a)
			}
		}
	})
	wg.Go(func() {
		for batch := range items {
			for _, a := range batch {
				s.indexItems(nil, a)
			}
		}
	})
	err := d.accounts(nAcc, s.byProv, func(batch []*account) {
		records <- batch
		items <- batch
	})
	close(records)
	close(items)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for n := d.count(); n > 0 && d.err == nil; n-- {
		id, rev, provider, at, erased := d.varint(), d.uvarint(), d.varint(), stampOf(d.varint()), d.byte()
		s.deleted[id] = tombstone{rev: rev, provider: provider, at: at, erased: erased == 1}
	}
	for _, m := range s.drops.all() {
		for n := d.count(); n > 0 && d.err == nil; n-- {
			id, pos := d.varint(), d.uvarint()
			m[id] = pos
		}
	}
	if end := d.fixed(len(snapEnd)); d.err == nil && end != snapEnd {
		return nil, fmt.Errorf("%w: bad end marker %q", errSnapshotFormat, end)
	}
	if d.err != nil {
		return nil, d.fail()
	}
	return s, nil
}

// sizeHint bounds a count read from a payload before it sizes a map, so a
// payload that lies about its counts cannot make the load allocate more
// than the data it actually holds needs.
func sizeHint(n int) int { return min(n, 1<<22) }

// accounts reads n account records, checking that their ids ascend and
// their providers are known, and hands them to emit in batches.
func (d *decoder) accounts(n int, providers map[int64]*provIndex, emit func([]*account)) error {
	const batchSize = 1024
	batch := make([]*account, 0, batchSize)
	var last int64
	for i := range n {
		a := d.account()
		if d.err != nil {
			return d.fail()
		}
		switch {
		case i > 0 && a.id <= last:
			return fmt.Errorf("%w: account %d after %d: ids must ascend", errSnapshotFormat, a.id, last)
		case providers[a.provider] == nil:
			return fmt.Errorf("%w: account %d of provider %d, which the header does not list", errSnapshotFormat, a.id, a.provider)
		}
		last = a.id
		batch = append(batch, a)
		if len(batch) == batchSize {
			emit(batch)
			batch = make([]*account, 0, batchSize)
		}
	}
	if len(batch) > 0 {
		emit(batch)
	}
	return nil
}

// decoder reads a payload through its own buffer (varints are parsed from
// the buffer, not byte by byte through an interface). The first error
// sticks in err; later reads return zero values.
type decoder struct {
	r      io.Reader
	buf    []byte // unread data is buf[i:]
	i      int
	eof    bool
	err    error
	sealer TextSealer // set for a sealed payload
}

// fill makes at least need bytes available when the input has them.
func (d *decoder) fill(need int) {
	if len(d.buf)-d.i >= need || d.eof {
		return
	}
	n := copy(d.buf[:cap(d.buf)], d.buf[d.i:])
	d.buf, d.i = d.buf[:n], 0
	if need > cap(d.buf) {
		d.buf = append(make([]byte, 0, need), d.buf...)
	}
	for len(d.buf) < need && !d.eof {
		m, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+m]
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			d.err, d.eof = err, true
		}
	}
}

func (d *decoder) fail() error {
	if errors.Is(d.err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated", errSnapshotFormat)
	}
	return fmt.Errorf("%w: %w", errSnapshotFormat, d.err)
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	d.fill(binary.MaxVarintLen64)
	v, w := binary.Uvarint(d.buf[d.i:])
	if w <= 0 {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
			if w < 0 {
				d.err = errors.New("varint overflows 64 bits")
			}
		}
		return 0
	}
	d.i += w
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// count reads a count that sizes allocations, refusing absurd values.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > 1<<40 && d.err == nil {
		d.err = fmt.Errorf("count %d out of range", v)
	}
	return int(v)
}

// items reads the number of an account's subscriptions or devices.
func (d *decoder) items() int {
	n := d.count()
	if n > maxSnapItems && d.err == nil {
		d.err = fmt.Errorf("%d items in one account", n)
	}
	return n
}

// take returns the next n bytes, valid until the next read.
func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	d.fill(n)
	if len(d.buf)-d.i < n {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
		}
		return nil
	}
	b := d.buf[d.i : d.i+n]
	d.i += n
	return b
}

func (d *decoder) byte() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// bytes reads a length-prefixed byte string, valid until the next read.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > maxSnapText && d.err == nil {
		d.err = fmt.Errorf("string of %d bytes", n)
	}
	return d.take(int(n))
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) fixed(n int) string { return string(d.take(n)) }

// account reads and checks one account record.
func (d *decoder) account() *account {
	a := &account{
		id:       d.varint(),
		provider: d.varint(),
		created:  stampOf(d.varint()),
		updated:  stampOf(d.varint()),
		region:   d.varint(),
		rev:      d.uvarint(),
		flags:    uint16(d.uvarint()),
		limit:    int32(d.varint()),
	}
	a.data = d.text(a.id, accountText, numFields)
	if d.err == nil && !validPacked(a.data, numFields) {
		d.err = fmt.Errorf("account %d: malformed text fields", a.id)
	}
	if n := d.items(); n > 0 && d.err == nil {
		a.subs = make([]sub, n)
		for i := range a.subs {
			a.subs[i] = sub{
				id: d.varint(), tariff: d.varint(),
				start: d.varint(), startNs: int32(d.varint()),
				stop: d.varint(), stopNs: int32(d.varint()),
				device: d.varint(), timeShift: int32(d.varint()),
			}
		}
	}
	if n := d.items(); n > 0 && d.err == nil {
		a.devs = make([]dev, n)
		for i := range a.devs {
			x := dev{id: d.varint(), created: stampOf(d.varint()), first: stampOf(d.varint()), last: stampOf(d.varint()), deviceType: d.varint(),
				class: d.byte(), flags: d.byte()}
			x.text = d.text(a.id, deviceText(x.id), numDevFields)
			if d.err == nil && (!validPacked(x.text, numDevFields) ||
				(x.class != classUnknown && int(x.class) >= len(deviceClasses))) {
				d.err = fmt.Errorf("account %d: malformed device %d", a.id, x.id)
			}
			a.devs[i] = x
		}
	}
	if d.err != nil {
		return nil
	}
	return a
}

// validPacked reports whether s holds exactly n length-prefixed fields.
func validPacked(s string, n int) bool {
	for range n {
		n, w := uvarintString(s)
		if w == 0 || w > binary.MaxVarintLen64 || s[w-1] >= 0x80 || n < 0 || n > len(s)-w {
			return false
		}
		s = s[w+n:]
	}
	return s == ""
}
