package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tvsm/internal/testkit/chtest"
	"tvsm/projections/stats"
	"tvsm/projections/stats/clickhouse"
	"tvsm/projections/stats/statstest"
)

func TestMain(m *testing.M) { os.Exit(chtest.Main(m)) }

var dbSeq atomic.Int64

// freshDB returns the name of a database no other test uses.
func freshDB() string { return fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1)) }

// newStore opens a store on a database of its own on the shared server.
func newStore(t testing.TB) *clickhouse.Store {
	t.Helper()
	return openURL(t, chtest.Shared(t).URL(freshDB()))
}

func openURL(t testing.TB, url string) *clickhouse.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := clickhouse.Open(ctx, url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawConn is a plain driver connection to the shared server, for checking
// what the store wrote.
func rawConn(t testing.TB) driver.Conn {
	t.Helper()
	opts, err := ch.ParseDSN(chtest.Shared(t).URL("default"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestOpenCreatesAndMigratesOnce(t *testing.T) {
	ctx := t.Context()
	db := freshDB()
	url := chtest.Shared(t).URL(db)
	first := openURL(t, url)
	d := statstest.D("2026-04-01")
	row := stats.SubscriptionDay{Day: d, Provider: 1, Tariff: 2, Enabled: 3, Version: 4}
	if err := first.WriteSubscriptionDays(ctx, []stats.SubscriptionDay{row}); err != nil {
		t.Fatal(err)
	}
	first.Close()

	// Opening again finds the schema current and the data in place.
	second := openURL(t, url)
	rows, err := stats.AllSubscriptionDays(ctx, second, stats.Range{From: d, To: d})
	if err != nil || len(rows) != 1 || rows[0] != row {
		t.Fatalf("after reopening: %+v, %v; want [%+v]", rows, err, row)
	}
	var versions []uint32
	var applied uint64
	conn := rawConn(t)
	if err := conn.QueryRow(ctx, "SELECT groupArray(version), count() FROM (SELECT version FROM "+db+
		".schema_version FINAL ORDER BY version)").Scan(&versions, &applied); err != nil {
		t.Fatal(err)
	}
	if want := seq(clickhouse.SchemaVersion); !slices.Equal(versions, want) || applied != uint64(len(want)) {
		t.Fatalf("schema_version rows %v (%d), want %v once each", versions, applied, want)
	}
}

func seq(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i + 1)
	}
	return out
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	db := freshDB()
	url := chtest.Shared(t).URL(db)
	openURL(t, url).Close()
	future := clickhouse.SchemaVersion + 1
	if err := rawConn(t).Exec(t.Context(), fmt.Sprintf("INSERT INTO %s.schema_version SELECT %d, now()", db, future)); err != nil {
		t.Fatal(err)
	}
	s, err := clickhouse.Open(t.Context(), url)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a database migrated by a newer binary")
	}
	if !strings.Contains(err.Error(), fmt.Sprint(future)) || errors.Is(err, stats.ErrUnavailable) {
		t.Fatalf("Open: %v; want a schema version error naming %d", err, future)
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, url := range []string{
		"",
		"http://127.0.0.1:9000/db",
		"clickhouse:///db",
		"clickhouse://127.0.0.1:9000/bad-name",
		"clickhouse://127.0.0.1:9000/a/b",
		"clickhouse://127.0.0.1:9000/db?dial_timeout=soon",
		"clickhouse://u:secret@127.0.0.1:9000/bad-name",
		"clickhouse://u:secret@127.0.0.1:9000/db?max_open_conns=x",
	} {
		s, err := clickhouse.Open(t.Context(), url)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) accepted", url)
			continue
		}
		if errors.Is(err, stats.ErrUnavailable) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): %v; want a URL error without the password", url, err)
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ url, db, addr string }{
		{"clickhouse://127.0.0.1:9000", clickhouse.DefaultDatabase, "127.0.0.1:9000"},
		{"clickhouse://127.0.0.1:9000/", clickhouse.DefaultDatabase, "127.0.0.1:9000"},
		{"clickhouse://u:p@ch.example:9440/stats_1?dial_timeout=2s&secure=true", "stats_1", "ch.example:9440"},
	} {
		db, addrs, err := clickhouse.ParseURL(c.url)
		if err != nil || db != c.db || !slices.Equal(addrs, []string{c.addr}) {
			t.Errorf("ParseURL(%q) = %q, %v, %v; want %q, [%s]", c.url, db, addrs, err, c.db, c.addr)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"clickhouse://127.0.0.1:9000/tvsm", "clickhouse://u:p@h:1/db?dial_timeout=1s&compress=lz4",
		"clickhouse://h:1,h2:2/db", "clickhouse://h/%zz", "http://h/db", "clickhouse://h:1/db?block_buffer_size=0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		db, addrs, err := clickhouse.ParseURL(raw)
		if err != nil {
			return
		}
		if len(addrs) == 0 || db == "" || strings.ContainsAny(db, "`./ -") {
			t.Fatalf("ParseURL(%q) accepted db %q, addrs %v", raw, db, addrs)
		}
	})
}
