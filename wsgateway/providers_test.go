package wsgateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// listed returns the devices RangeProvider lists for provider, in order.
func listed(h *Hub, provider int64) []int64 {
	var ids []int64
	h.RangeProvider(provider, func(r Registered) bool {
		ids = append(ids, r.Device)
		return true
	})
	slices.Sort(ids)
	return ids
}

// listedAll returns "provider:device" of every connection RangeRegistered
// lists, in order.
func listedAll(h *Hub) []string {
	var out []string
	h.RangeRegistered(func(p int64, r Registered) bool {
		out = append(out, strconv.FormatInt(p, 10)+":"+strconv.FormatInt(r.Device, 10))
		return true
	})
	slices.Sort(out)
	return out
}

// providerHub is a hub behind a server on which a device connects to
// base+"/?device=D&provider=P": the provider comes with the connection, as
// it comes from a device token (the account is the device's id times 10).
func providerHub(t *testing.T) (*Hub, string) {
	t.Helper()
	h := NewHub(Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, _ := strconv.ParseInt(q.Get("device"), 10, 64)
		p, _ := strconv.ParseInt(q.Get("provider"), 10, 64)
		_ = h.Upgrade(w, r, Identity{Device: id, Account: id * 10, Provider: p})
	}))
	t.Cleanup(func() { h.Close(); srv.Close() })
	return h, "ws" + strings.TrimPrefix(srv.URL, "http")
}

func TestProviderListsFollowConnectionsComingAndGoing(t *testing.T) {
	h, base := providerHub(t)
	dial := func(device, provider int64) *websocket.Conn {
		t.Helper()
		old, _ := h.Lookup(device)
		ws, resp, err := websocket.DefaultDialer.Dial(base+"/?device="+strconv.FormatInt(device, 10)+
			"&provider="+strconv.FormatInt(provider, 10), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		t.Cleanup(func() { _ = ws.Close() })
		waitFor(t, 5*time.Second, func() bool { c, ok := h.Lookup(device); return ok && c != old }, "device registered")
		return ws
	}
	hangUp := func(device int64, ws *websocket.Conn) {
		t.Helper()
		_ = ws.Close()
		waitFor(t, 5*time.Second, func() bool { return !h.Connected(device) }, "device gone")
	}

	conns := map[int64]*websocket.Conn{}
	for _, d := range []int64{1, 2, 3, 4} {
		conns[d] = dial(d, 1)
	}
	conns[5] = dial(5, 2)
	if got := listed(h, 1); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("provider 1: %v", got)
	}
	// Leaving from the middle of a list moves the last one into its place.
	hangUp(2, conns[2])
	if got := listed(h, 1); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Fatalf("provider 1 after device 2 left: %v", got)
	}
	// A device connecting again replaces its connection once, even when the
	// old one closes after the new one registered.
	conns[3] = dial(3, 1)
	waitFor(t, 5*time.Second, func() bool { return h.Count() == 4 }, "the replaced connection gone")
	if got := listed(h, 1); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Fatalf("provider 1 after device 3 connected again: %v", got)
	}
	// A device now of another provider moves to that provider's list.
	conns[4] = dial(4, 2)
	waitFor(t, 5*time.Second, func() bool { return h.Count() == 4 }, "the replaced connection gone")
	if got, want := listedAll(h), []string{"1:1", "1:3", "2:4", "2:5"}; !slices.Equal(got, want) {
		t.Fatalf("all: %v, want %v", got, want)
	}
	for _, d := range []int64{1, 3} {
		hangUp(d, conns[d])
	}
	if got := listed(h, 1); len(got) != 0 {
		t.Fatalf("provider 1 with nobody connected: %v", got)
	}
	if n1, n2 := h.ProviderCount(1), h.ProviderCount(2); n1 != 0 || n2 != 2 {
		t.Fatalf("ProviderCount: provider 1 %d, provider 2 %d; want 0 and 2", n1, n2)
	}
	// A range stops when told to.
	n := 0
	h.RangeRegistered(func(int64, Registered) bool { n++; return false })
	if n != 1 {
		t.Fatalf("RangeRegistered went on after false: %d calls", n)
	}
}

// Devices connecting, reconnecting (to another provider, too) and leaving
// at once, from several goroutines: once every connection has ended or
// settled, the lists by provider hold exactly the registered connections,
// each under its provider, and ProviderCount counts them.
func TestProviderListsAgreeWithTheRegistryUnderChurn(t *testing.T) {
	h, base := providerHub(t)

	const workers, steps, devices = 6, 40, 12 // devices shared by the workers
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []*websocket.Conn
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range steps {
				device, provider := int64((w*7+i*5)%devices+1), int64((w+i)%3+1)
				ws, resp, err := websocket.DefaultDialer.Dial(base+"/?device="+strconv.FormatInt(device, 10)+
					"&provider="+strconv.FormatInt(provider, 10), nil)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				_ = resp.Body.Close()
				if i%3 == 0 {
					_ = ws.Close() // leaves at once
					continue
				}
				mu.Lock()
				open = append(open, ws)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, ws := range open {
			_ = ws.Close()
		}
	})
	// Settled: no connection is still being replaced or closed, so the
	// registry holds one connection per device still connected.
	agree := func() bool {
		seen := map[int64]int64{}
		entries := 0
		byProvider := map[int64]int{}
		h.RangeRegistered(func(p int64, r Registered) bool {
			seen[r.Device] = p
			entries++
			byProvider[p]++
			return true
		})
		if entries != len(seen) || entries != h.Count() {
			return false
		}
		for p := int64(1); p <= 3; p++ {
			if h.ProviderCount(p) != byProvider[p] {
				return false
			}
		}
		for d, p := range seen {
			c, ok := h.Lookup(d)
			if !ok || c.Identity().Provider != p {
				return false
			}
		}
		return true
	}
	waitFor(t, 5*time.Second, agree, "the lists by provider to agree with the registry")
	if h.Count() == 0 {
		t.Fatal("no device stayed connected: the test checked nothing")
	}
}
