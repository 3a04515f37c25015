// Package refcount shares one value per key among the plugins that ask for
// it, and drops it when the last of them gives it back. The devicefit
// plugins of one scheduling framework share their DRA tracker and node
// table this way, keyed by the framework's Handle: the framework builds
// each plugin with the same Handle and calls every plugin's Close.
package refcount

import (
	"sync"
)

// Map holds the shared values by key.
type Map[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*entry[V]
}

type entry[V any] struct {
	v    V
	refs int
}

// Get returns the value of k, built by build on the first ask, and the
// function that gives it back, once: the last one given back drops it.
func (m *Map[K, V]) Get(k K, build func() V) (V, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[K]*entry[V]{}
	}
	e := m.m[k]
	if e == nil {
		e = &entry[V]{v: build()}
		m.m[k] = e
	}
	e.refs++
	var once sync.Once
	return e.v, func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if e.refs--; e.refs == 0 && m.m[k] == e {
				delete(m.m, k)
			}
		})
	}
}

// Len is the number of values held.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
