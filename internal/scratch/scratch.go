// Package scratch holds helpers for slices a plugin keeps from cycle to
// cycle instead of allocating them per pod.
package scratch

// Resize returns s with length n, zeroed, reusing its array when it is
// large enough.
func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Positions returns the positions 0 to n-1, kept in *all from call to
// call (a walk over every row, where a kept walk redoes the rows moved).
func Positions(all *[]int, n int) []int {
	for j := len(*all); j < n; j++ {
		*all = append(*all, j)
	}
	return (*all)[:n]
}

// LeastRecent returns the key of m whose used stamp is lowest ("" for an
// empty map): the entry a bounded cache of kept walks gives up first.
func LeastRecent[V any](m map[string]V, used func(V) uint64) string {
	var key string
	var low uint64
	for k, v := range m {
		if u := used(v); key == "" || u < low {
			key, low = k, u
		}
	}
	return key
}
