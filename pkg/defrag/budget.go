package defrag

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Budget is the defragmenter's move budget over a sliding hour: a plan
// starts only when all of its moves fit what is left, and every eviction
// is spent when it is made, so no burst exceeds perHour in any hour.
// (Concurrency is the other half: Apply.Batch evicts at most that many
// pods before waiting for their replacements.)
type Budget struct {
	perHour int
	clock   clock.PassiveClock

	mu    sync.Mutex
	spent []time.Time // evictions of the last hour, oldest first
}

// NewBudget allows perHour moves in any hour.
func NewBudget(perHour int, c clock.PassiveClock) *Budget {
	return &Budget{perHour: perHour, clock: c}
}

// Remaining is how many moves may start now.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire()
	return b.perHour - len(b.spent)
}

// Spend records one move made now.
func (b *Budget) Spend() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire()
	b.spent = append(b.spent, b.clock.Now())
}

// expire drops the moves older than an hour.
func (b *Budget) expire() {
	cutoff := b.clock.Now().Add(-time.Hour)
	i := 0
	for i < len(b.spent) && !b.spent[i].After(cutoff) {
		i++
	}
	b.spent = b.spent[i:]
}
