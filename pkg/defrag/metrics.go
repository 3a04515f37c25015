package defrag

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Subsystem prefixes the defragmenter's metrics.
const Subsystem = "devicefit_defragmenter"

// The triggers and the outcomes of a plan, as metric labels.
const (
	TriggerPending   = "pending"
	TriggerFreeNodes = "free_nodes"

	// OutcomeApplied: the moves were made (and, for a pending pod, it was
	// bound); OutcomeFailed: an eviction or a wait failed part way.
	OutcomeApplied = "applied"
	OutcomeFailed  = "failed"
	// OutcomeDryRun: planned and reported, nothing evicted.
	OutcomeDryRun = "dry_run"
	// OutcomeNoPlan: no moves of opted-in pods make room.
	OutcomeNoPlan = "no_plan"
	// OutcomeTooManyMoves: a plan needs more than pending.maxMoves.
	OutcomeTooManyMoves = "too_many_moves"
	// OutcomeOverBudget: the plan's moves exceed what the hour has left.
	OutcomeOverBudget = "over_budget"
	// OutcomeError: the planner failed (logged).
	OutcomeError = "error"
)

var (
	plans = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "plans_total",
		Help:           "Plans made by the defragmenter, by trigger (pending, free_nodes) and outcome (applied, failed, dry_run, no_plan, too_many_moves, over_budget, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"trigger", "outcome"})
	moves = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "moves_total",
		Help:           "Pods moved by the defragmenter (evicted for their controller to recreate), by trigger; with dry_run=\"true\" the moves it would have made.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"trigger", "dry_run"})
	budgetRemaining = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      Subsystem,
		Name:           "budget_remaining_moves",
		Help:           "Moves the defragmenter may still start in the current sliding hour (budget.movesPerHour minus the evictions of the last hour).",
		StabilityLevel: metrics.ALPHA,
	})
	register sync.Once
)

// RegisterMetrics registers the defragmenter's metrics with component-base's
// legacy registry, which /metrics serves.
func RegisterMetrics() {
	register.Do(func() {
		legacyregistry.MustRegister(plans, moves, budgetRemaining)
	})
}
