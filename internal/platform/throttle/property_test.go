package throttle

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// model is the limiter's specification: every failure of every key is
// remembered, and a key is refused exactly when Limit of its failures lie
// within the window (after the horizon now-Window).
type model struct {
	limit    int
	window   int64
	failures map[string][]int64
}

// refused reports whether key is refused at now, and the wait until its
// Limit-th newest failure leaves the window.
func (m *model) refused(key string, now int64) (bool, time.Duration) {
	var recent []int64
	for _, f := range m.failures[key] {
		if f > now-m.window {
			recent = append(recent, f)
		}
	}
	if len(recent) < m.limit {
		return false, 0
	}
	return true, time.Duration(recent[len(recent)-m.limit] + m.window - now)
}

// A limiter run is a byte string, one operation a byte: the low two bits
// choose Allow, Fail, Succeed or a clock step, the upper six the key (out
// of keys) or the step's length.
const (
	opAllow = iota
	opFail
	opSucceed
	opStep
)

// runLimiter drives a limiter and its model with ops and fails t on the
// first disagreement. Whatever the ops, the limiter never panics and never
// tracks more than maxKeys keys. When keys <= maxKeys it is never full, so
// it must answer exactly as the model does, retry-after included; when it
// may evict, it may forget a key early and allow what the model refuses,
// never the reverse.
func runLimiter(t *testing.T, limit, maxKeys, keys int, ops []byte) {
	t.Helper()
	const window = 10 * time.Second
	evicting := keys > maxKeys
	now := t0
	l := New(Options{Limit: limit, Window: window, MaxKeys: maxKeys, Clock: func() time.Time { return now }})
	m := &model{limit: limit, window: int64(window), failures: map[string][]int64{}}
	for i, op := range ops {
		arg := int(op >> 2)
		key := fmt.Sprint("k", arg%keys)
		switch op & 3 {
		case opAllow:
			ok, wait := l.Allow(key)
			refused, wantWait := m.refused(key, now.UnixNano())
			switch {
			case ok && refused && !evicting:
				t.Fatalf("op %d: %s allowed, but %d failures lie within the window", i, key, limit)
			case !ok && !refused:
				t.Fatalf("op %d: %s refused with fewer than %d failures within the window", i, key, limit)
			case !ok && wait != wantWait:
				t.Fatalf("op %d: %s retry after %v, want %v", i, key, wait, wantWait)
			}
		case opFail:
			l.Fail(key)
			m.failures[key] = append(m.failures[key], now.UnixNano())
		case opSucceed:
			l.Succeed(key)
			delete(m.failures, key)
		case opStep:
			// 0 to 15 s, up to a window and a half: the clock sometimes
			// stands still and sometimes lands exactly on a horizon.
			now = now.Add(time.Duration(arg%16) * time.Second)
		}
		if n := l.Len(); n > maxKeys {
			t.Fatalf("op %d: %d keys tracked, MaxKeys %d", i, n, maxKeys)
		}
	}
}

// TestLimiterMatchesModel runs random operation sequences against the
// model, half with room for every key and half with eviction.
func TestLimiterMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2026))
	for run := range 2000 {
		limit, maxKeys, keys := 1+rng.IntN(6), 64, 1+rng.IntN(64)
		if run%2 == 1 {
			maxKeys, keys = 1+rng.IntN(4), 5+rng.IntN(8)
		}
		ops := make([]byte, 50+rng.IntN(400))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		if !t.Run(fmt.Sprintf("run%d_limit%d_maxkeys%d_keys%d", run, limit, maxKeys, keys), func(t *testing.T) {
			runLimiter(t, limit, maxKeys, keys, ops)
		}) {
			return
		}
	}
}

// FuzzLimiter lets the fuzzer choose the operations; the first three bytes
// choose Limit (1-8), MaxKeys (1-8) and the number of keys (1-16).
func FuzzLimiter(f *testing.F) {
	// The sequence that once panicked: fail, a quiet window, allow, fail.
	f.Add([]byte{4, 7, 0, opFail, opStep | 11<<2, opAllow, opFail})
	f.Add([]byte{2, 1, 3, opFail, opFail | 1<<2, opAllow | 1<<2, opStep | 10<<2, opAllow, opFail | 2<<2, opAllow})
	f.Add([]byte{0, 0, 0, opFail, opFail, opAllow, opSucceed, opAllow, opStep | 15<<2, opFail, opAllow})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 3 {
			return
		}
		runLimiter(t, 1+int(in[0]%8), 1+int(in[1]%8), 1+int(in[2]%16), in[3:])
	})
}
