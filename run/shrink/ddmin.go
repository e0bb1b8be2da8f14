package shrink

import "context"

// ddmin is delta debugging's minimisation (Zeller and Hildebrandt): it
// returns a subset of items, in their order, for which test holds and
// from which no single chunk at the finest granularity tried can be
// removed. items itself is taken to pass (it is the best so far); the
// empty set is the caller's to try. test is called on subsets only, each
// at most once per round; ctx ending stops it with the smallest passing
// so far.
//
// The chunks are tried from the last: the fault that makes a violation
// is most often the one just before it, so the late chunk is the likely
// keeper. The complements are tried from the first chunk removed.
func ddmin[T any](ctx context.Context, items []T, test func([]T) bool) []T {
	n := 2
	for len(items) >= 2 && ctx.Err() == nil {
		chunks := split(items, n)
		if c, ok := firstPassing(reversed(chunks), test); ok {
			items, n = c, 2
			continue
		}
		if n > 2 { // with two chunks each complement is the other chunk, tried already
			if c, ok := firstPassing(complements(chunks), test); ok {
				items, n = c, max(n-1, 2)
				continue
			}
		}
		if n >= len(items) || ctx.Err() != nil {
			break
		}
		n = min(2*n, len(items))
	}
	return items
}

// firstPassing is the first candidate test passes.
func firstPassing[T any](cands [][]T, test func([]T) bool) ([]T, bool) {
	for _, c := range cands {
		if test(c) {
			return c, true
		}
	}
	return nil, false
}

// split cuts items into n chunks of nearly equal length, the longer ones
// first.
func split[T any](items []T, n int) [][]T {
	var out [][]T
	start := 0
	for i := range n {
		size := len(items) / n
		if i < len(items)%n {
			size++
		}
		out = append(out, items[start:start+size:start+size])
		start += size
	}
	return out
}

func reversed[T any](chunks [][]T) [][]T {
	out := make([][]T, 0, len(chunks))
	for i := len(chunks) - 1; i >= 0; i-- {
		out = append(out, chunks[i])
	}
	return out
}

// complements are, for each chunk, the items of all the others.
func complements[T any](chunks [][]T) [][]T {
	var out [][]T
	for i := range chunks {
		var c []T
		for j, ch := range chunks {
			if j != i {
				c = append(c, ch...)
			}
		}
		out = append(out, c)
	}
	return out
}
