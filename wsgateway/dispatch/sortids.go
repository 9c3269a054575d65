package dispatch

import "slices"

// radixMin is the length from which sortDevices sorts by radix: below it a
// comparison sort is as fast.
const radixMin = 256

// sortDevices sorts device ids in place. A round's thousands of ids are
// sorted by radix, one pass per byte in which they differ (three for ids
// below 2^24): on 10,000 ids in random order that is several times faster
// than a comparison sort, and the claim of a round waits for it before
// its first device is written to.
func sortDevices(ids []int64) {
	if len(ids) < radixMin {
		slices.Sort(ids)
		return
	}
	// As unsigned keys with the sign bit flipped, ids order as they do
	// signed; only the bytes in which some keys differ need a pass.
	const flip = 1 << 63
	var and, or uint64 = ^uint64(0), 0
	for _, id := range ids {
		k := uint64(id) ^ flip
		and &= k
		or |= k
	}
	varying := and ^ or
	src, dst := ids, make([]int64, len(ids))
	for shift := uint(0); shift < 64; shift += 8 {
		if (varying>>shift)&0xff == 0 {
			continue
		}
		var count [256]int
		for _, id := range src {
			count[((uint64(id)^flip)>>shift)&0xff]++
		}
		pos := 0
		for b, n := range count {
			count[b] = pos
			pos += n
		}
		for _, id := range src {
			b := ((uint64(id) ^ flip) >> shift) & 0xff
			dst[count[b]] = id
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ids[0] {
		copy(ids, src)
	}
}
