package dra

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestMilli: the fast path for whole numbers and the general one agree.
func TestMilli(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want int64
	}{
		{"500", 500_000},                          // shares
		{"40Gi", 40 << 30 * 1000},                 // memory in bytes
		{"1500m", 1500},                           // not a whole number: MilliValue
		{"1k", 1_000_000},                         // a positive scale
		{"9223372036854775", 9223372036854775000}, // the largest whole number that fits
	} {
		q := resource.MustParse(tc.q)
		if got := milli(&q); got != tc.want {
			t.Errorf("milli(%s) = %d, want %d", tc.q, got, tc.want)
		}
		if got, general := milli(&q), q.MilliValue(); got != general {
			t.Errorf("milli(%s) = %d, MilliValue %d", tc.q, got, general)
		}
	}
}
