package embedded

import (
	"os"
	"testing"
)

// A segment made in a hurry (no spare ready) still takes records up to the
// size wanted: the log does not move on to a new file at every record.
func TestHurriedSegmentTakesRecordsUpToItsSize(t *testing.T) {
	l, found, err := openCommitLog(t.TempDir(), new(walSyncs), syncData, func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.start(found); err != nil {
		t.Fatal(err)
	}
	defer l.close(false)
	if err := l.switchSegment(); err != nil { // nothing asked for a spare yet
		t.Fatal(err)
	}
	hurried := l.cur.seq
	for range 10 {
		l.stage(make([]byte, 1000))
		seg, err := l.write()
		if err != nil {
			t.Fatal(err)
		}
		if err := l.sync(seg); err != nil {
			t.Fatal(err)
		}
	}
	if l.cur.seq != hurried {
		t.Fatalf("10 records of 1 KB moved the log from segment %d to %d, want them all in it (size %d)", hurried, l.cur.seq, l.cur.size)
	}
	info, err := os.Stat(l.cur.path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != l.cur.off {
		t.Fatalf("the hurried segment's file holds %d bytes, want the %d written", info.Size(), l.cur.off)
	}
}
