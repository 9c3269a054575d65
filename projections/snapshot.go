package projections

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"tvsm/eventstore"
)

// ErrCorruptSnapshot is returned (wrapped) by ReadSnapshot when a snapshot
// file is not a complete, intact snapshot of a supported format version.
var ErrCorruptSnapshot = errors.New("projections: corrupt snapshot")

// Snapshot file layout, all integers big-endian:
//
//	header:  magic "TVSMSNAP" | format version uint32 | position commit uint64 | position prepare uint64
//	payload: whatever the write function wrote
//	trailer: payload length uint64 | CRC32C (Castagnoli) of header, payload and length, uint32
//
// The length in the trailer lets a reader tell a truncated file from one whose
// payload happens to end early; the checksum covers the position too.
const (
	snapshotMagic      = "TVSMSNAP"
	snapshotVersion    = 1
	snapshotHeaderLen  = len(snapshotMagic) + 4 + 8 + 8
	snapshotTrailerLen = 8 + 4
	snapshotBufSize    = 256 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot atomically replaces the snapshot at path with the state that
// write produces, taken at log position pos. It writes a temporary file in the
// same directory (header, payload, checksum trailer), fsyncs it, renames it
// over path and fsyncs the directory, so a crash at any point leaves either
// the old snapshot or the new one. Output is buffered and streamed; write may
// produce any amount of data. Only one writer per path may run at a time.
//
// pos must be a position the state already includes (everything up to pos is
// in it): on start-up the owner restores the state and resumes the log after
// pos. See SnapshotCheckpoints.
func WriteSnapshot(path string, pos eventstore.Position, write func(io.Writer) error) error {
	removeStaleTemps(path)
	err := writeFileAtomic(path, func(f *os.File) error {
		sw := &snapshotWriter{w: bufio.NewWriterSize(f, snapshotBufSize), crc: crc32.New(castagnoli)}
		var hdr [snapshotHeaderLen]byte
		copy(hdr[:], snapshotMagic)
		binary.BigEndian.PutUint32(hdr[8:], snapshotVersion)
		binary.BigEndian.PutUint64(hdr[12:], pos.Commit)
		binary.BigEndian.PutUint64(hdr[20:], pos.Prepare)
		if _, err := sw.write(hdr[:]); err != nil {
			return err
		}
		payload := &payloadWriter{sw: sw}
		if err := write(payload); err != nil {
			return fmt.Errorf("write payload: %w", err)
		}
		var tr [snapshotTrailerLen]byte
		binary.BigEndian.PutUint64(tr[:8], payload.n)
		if _, err := sw.write(tr[:8]); err != nil {
			return err
		}
		binary.BigEndian.PutUint32(tr[8:], sw.crc.Sum32())
		if _, err := sw.w.Write(tr[8:]); err != nil {
			return err
		}
		return sw.w.Flush()
	})
	if err != nil {
		return fmt.Errorf("projections: write snapshot %s at %v: %w", path, pos, err)
	}
	return nil
}

// snapshotWriter buffers output and checksums it.
type snapshotWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
}

func (s *snapshotWriter) write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.crc.Write(p[:n])
	return n, err
}

// payloadWriter is the io.Writer handed to the write function; it counts the
// payload bytes.
type payloadWriter struct {
	sw *snapshotWriter
	n  uint64
}

func (p *payloadWriter) Write(b []byte) (int, error) {
	n, err := p.sw.write(b)
	p.n += uint64(n)
	return n, err
}

// ReadSnapshot verifies the snapshot at path and then streams its payload to
// read, returning the log position the snapshot was taken at. It checks the
// magic, format version, length and checksum of the whole file before read
// sees a byte, so read is only ever given intact data.
//
// When there is no snapshot the error satisfies errors.Is(err,
// fs.ErrNotExist); a damaged, truncated or foreign file gives an error
// wrapping ErrCorruptSnapshot. An error from read is returned wrapped; the
// caller should then discard whatever read built.
func ReadSnapshot(path string, read func(io.Reader) error) (eventstore.Position, error) {
	pos, err := readSnapshot(path, read)
	if err != nil {
		return eventstore.Position{}, fmt.Errorf("projections: read snapshot %s: %w", path, err)
	}
	return pos, nil
}

func readSnapshot(path string, read func(io.Reader) error) (eventstore.Position, error) {
	f, err := os.Open(path)
	if err != nil {
		return eventstore.Position{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return eventstore.Position{}, err
	}
	size := st.Size()
	if size < int64(snapshotHeaderLen+snapshotTrailerLen) {
		return eventstore.Position{}, fmt.Errorf("%w: %d bytes is shorter than header and trailer", ErrCorruptSnapshot, size)
	}

	// Pass 1: header, trailer and checksum of everything.
	br := bufio.NewReaderSize(f, snapshotBufSize)
	var hdr [snapshotHeaderLen]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return eventstore.Position{}, err
	}
	if !bytes.Equal(hdr[:8], []byte(snapshotMagic)) {
		return eventstore.Position{}, fmt.Errorf("%w: bad magic %q", ErrCorruptSnapshot, hdr[:8])
	}
	if v := binary.BigEndian.Uint32(hdr[8:]); v != snapshotVersion {
		return eventstore.Position{}, fmt.Errorf("%w: unsupported format version %d (want %d)", ErrCorruptSnapshot, v, snapshotVersion)
	}
	pos := eventstore.Position{
		Commit:  binary.BigEndian.Uint64(hdr[12:]),
		Prepare: binary.BigEndian.Uint64(hdr[20:]),
	}
	payloadLen := size - int64(snapshotHeaderLen+snapshotTrailerLen)
	crc := crc32.New(castagnoli)
	crc.Write(hdr[:])
	if _, err := io.CopyN(crc, br, payloadLen); err != nil {
		return eventstore.Position{}, err
	}
	var tr [snapshotTrailerLen]byte
	if _, err := io.ReadFull(br, tr[:]); err != nil {
		return eventstore.Position{}, err
	}
	if n := binary.BigEndian.Uint64(tr[:8]); n != uint64(payloadLen) {
		return eventstore.Position{}, fmt.Errorf("%w: payload is %d bytes, trailer says %d (truncated?)", ErrCorruptSnapshot, payloadLen, n)
	}
	crc.Write(tr[:8])
	if got, want := crc.Sum32(), binary.BigEndian.Uint32(tr[8:]); got != want {
		return eventstore.Position{}, fmt.Errorf("%w: checksum %08x, trailer says %08x", ErrCorruptSnapshot, got, want)
	}

	// Pass 2: stream the verified payload.
	if _, err := f.Seek(int64(snapshotHeaderLen), io.SeekStart); err != nil {
		return eventstore.Position{}, err
	}
	br.Reset(io.LimitReader(f, payloadLen))
	if err := read(br); err != nil {
		return eventstore.Position{}, fmt.Errorf("read payload: %w", err)
	}
	return pos, nil
}
