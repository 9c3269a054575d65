package embedded

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"tvsm/projections/stats"
)

// SubscriptionDays implements stats.FactStore.
func (s *Store) SubscriptionDays(ctx context.Context, r stats.Range, fn func(stats.SubscriptionDay) error) error {
	return s.scanDays(ctx, kindSub, 0, r, func(key, val []byte) error {
		row, err := decodeSub(key, val)
		if err != nil {
			return err
		}
		return fn(row)
	})
}

// ActiveAccounts implements stats.FactStore.
func (s *Store) ActiveAccounts(ctx context.Context, provider int64, d stats.Day) ([]int64, error) {
	seen := map[int64]struct{}{}
	err := s.scanDays(ctx, kindDay, 0, stats.Range{From: d, To: d, Provider: provider}, func(key, val []byte) error {
		f, err := decodeDayFact(key, val)
		seen[f.account] = struct{}{}
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// classKey identifies a device class of a provider.
type classKey struct {
	provider int64
	class    string
}

// classSum accumulates a class's viewing.
type classSum struct {
	live, dvr int64
	devices   map[int64]struct{}
}

// DeviceClassTotals implements stats.FactStore.
func (s *Store) DeviceClassTotals(ctx context.Context, r stats.Range) ([]stats.DeviceClassTotal, error) {
	sums, err := s.seenClasses(ctx, r)
	if err != nil || len(sums) == 0 {
		return nil, err
	}
	err = s.scanDays(ctx, kindDay, 0, r, func(key, val []byte) error {
		f, err := decodeDayFact(key, val)
		if err != nil {
			return err
		}
		sum := sums[classKey{f.provider, f.class}]
		if sum == nil {
			return nil // class not seen by r.To
		}
		if f.live {
			sum.live += f.seconds
		} else {
			sum.dvr += f.seconds
		}
		sum.devices[f.device] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]stats.DeviceClassTotal, 0, len(sums))
	for k, sum := range sums {
		out = append(out, stats.DeviceClassTotal{Provider: k.provider, Class: k.class,
			LiveSeconds: sum.live, DVRSeconds: sum.dvr, UniqueDevices: int64(len(sum.devices))})
	}
	slices.SortFunc(out, func(a, b stats.DeviceClassTotal) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Class, b.Class))
	})
	return out, nil
}

// seenClasses returns an empty sum for every class of r's provider(s)
// first seen on or before r.To.
func (s *Store) seenClasses(ctx context.Context, r stats.Range) (map[classKey]*classSum, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.life.RUnlock()
	lower := []byte{kindSeen}
	if r.Provider != 0 {
		lower = putInt(lower, r.Provider)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: successor(lower)})
	if err != nil {
		return nil, fmt.Errorf("embedded stats: %w", err)
	}
	defer it.Close()
	sums := map[classKey]*classSum{}
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		val, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("embedded stats: %w", err)
		}
		if len(key) < 1+intLen || len(val) != dayLen {
			return nil, fmt.Errorf("embedded stats: bad class row %x", key)
		}
		if getDay(val) <= r.To {
			k := classKey{provider: getInt(key[1:]), class: string(key[1+intLen:])}
			sums[k] = &classSum{devices: map[int64]struct{}{}}
		}
	}
	return sums, it.Error()
}

// AccountChannelTotals implements stats.FactStore. It reads the facts by
// account, so it holds one account's channels at a time.
func (s *Store) AccountChannelTotals(ctx context.Context, r stats.Range, fn func(stats.AccountChannelTotal) error) error {
	var cur []stats.AccountChannelTotal // the current account's channels
	flush := func() error {
		slices.SortFunc(cur, func(a, b stats.AccountChannelTotal) int { return cmp.Compare(a.Channel, b.Channel) })
		for _, row := range cur {
			if err := fn(row); err != nil {
				return err
			}
		}
		cur = cur[:0]
		return nil
	}
	err := s.scanDays(ctx, kindAccount, intLen, r, func(key, val []byte) error {
		f, err := decodeAccountFact(key, val)
		if err != nil {
			return err
		}
		if len(cur) > 0 && (cur[0].Provider != f.provider || cur[0].Account != f.account) {
			if err := flush(); err != nil {
				return err
			}
		}
		i := slices.IndexFunc(cur, func(row stats.AccountChannelTotal) bool { return row.Channel == f.channel })
		if i < 0 {
			cur = append(cur, stats.AccountChannelTotal{Provider: f.provider, Account: f.account, Channel: f.channel})
			i = len(cur) - 1
		}
		if f.live {
			cur[i].LiveSeconds += f.seconds
		} else {
			cur[i].DVRSeconds += f.seconds
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// scanDays calls fn, in key order, for the entries of kind whose day is in
// r (and whose provider is r.Provider, when set). Keys are kind, provider,
// extra group bytes (the account), day, rest: within each group it seeks to
// r.From and skips to the next group after r.To, so it reads only entries
// in the range. fn must not keep key or val.
func (s *Store) scanDays(ctx context.Context, kind byte, extra int, r stats.Range, fn func(key, val []byte) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.life.RUnlock()
	lower := []byte{kind}
	if r.Provider != 0 {
		lower = putInt(lower, r.Provider)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: successor(lower)})
	if err != nil {
		return fmt.Errorf("embedded stats: %w", err)
	}
	defer it.Close()
	groupEnd := 1 + intLen + extra
	n := 0
	for ok := it.First(); ok; {
		key := it.Key()
		if len(key) < groupEnd+dayLen {
			return fmt.Errorf("embedded stats: bad key %x", key)
		}
		switch d := getDay(key[groupEnd:]); {
		case d < r.From:
			ok = it.SeekGE(putDay(slices.Clip(key[:groupEnd]), r.From))
		case d > r.To:
			next := successor(key[:groupEnd])
			ok = next != nil && it.SeekGE(next)
		default:
			val, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("embedded stats: %w", err)
			}
			if err := fn(key, val); err != nil {
				return err
			}
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ok = it.Next()
		}
	}
	return it.Error()
}

// successor returns the smallest key greater than every key starting with
// prefix, or nil when there is none (all bytes 0xff).
func successor(prefix []byte) []byte {
	out := slices.Clone(prefix)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] != 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}
