package defrag

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBudgetSlidingHour(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	b := NewBudget(3, clock)
	steps := []struct {
		advance time.Duration
		spend   int
		want    int
	}{
		{want: 3},
		{spend: 2, want: 1},
		{advance: 30 * time.Minute, spend: 1, want: 0},
		// The first two are a nanosecond short of an hour old: still in.
		{advance: 30*time.Minute - time.Nanosecond, want: 0},
		{advance: time.Nanosecond, want: 2},
		{advance: 30 * time.Minute, want: 3},
	}
	for i, s := range steps {
		clock.SetTime(clock.Now().Add(s.advance))
		for range s.spend {
			b.Spend()
		}
		if got := b.Remaining(); got != s.want {
			t.Fatalf("step %d: %d remaining, want %d", i, got, s.want)
		}
	}
}
