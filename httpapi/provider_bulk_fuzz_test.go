package httpapi

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzReadBulk: whatever a bulk body holds, reading it never panics, and
// yields one record per non-blank line, numbered as the body numbers them,
// each with a login or a problem.
func FuzzReadBulk(f *testing.F) {
	f.Add([]byte(`{"login":"anna","fullname":"A","pin_md5":"0123456789abcdef0123456789abcdef"}` + "\n\n" + `{"login":"b"}` + "\n"))
	f.Add([]byte("not json\r\n{\"login\":1}\n{}\n  \n{\"login\":\"x\",\"provider\":\"7\"}"))
	f.Add([]byte("\xff\xfe\n{\"login\":\"\\ud800\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		records := make(chan bulkRecord)
		done := make(chan error, 1)
		go func() {
			defer close(records)
			done <- readBulk(context.Background(), bytes.NewReader(body), 9, records)
		}()
		var got []bulkRecord
		for r := range records {
			got = append(got, r)
		}
		if err := <-done; err != nil {
			return // a line too long: reading stops there
		}
		var want []int
		for i, line := range strings.Split(string(body), "\n") {
			if len(bytes.TrimSpace([]byte(line))) > 0 {
				want = append(want, i+1)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d records for %d non-blank lines", len(got), len(want))
		}
		for i, r := range got {
			if r.seq != i || r.line != want[i] {
				t.Fatalf("record %d: seq %d line %d, want line %d", i, r.seq, r.line, want[i])
			}
			if r.err == nil && r.login == "" {
				t.Fatalf("record %d: no login and no problem", i)
			}
		}
	})
}
