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
