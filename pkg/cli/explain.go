package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/devicefit/devicefit/pkg/replay"
)

// ReasonGroup is the nodes one plugin rejected for one reason.
type ReasonGroup struct {
	Plugin string
	Reason string
	Nodes  []string
}

// GroupByReason groups the rejected nodes by plugin and reason, the
// largest groups first.
func GroupByReason(e *replay.Explanation) []ReasonGroup {
	index := map[[2]string]int{}
	var out []ReasonGroup
	for _, v := range e.Nodes {
		if v.Feasible {
			continue
		}
		k := [2]string{v.Plugin, strings.Join(v.Reasons, "; ")}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ReasonGroup{Plugin: k[0], Reason: k[1]})
		}
		out[i].Nodes = append(out[i].Nodes, v.Node)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i].Nodes) != len(out[j].Nodes) {
			return len(out[i].Nodes) > len(out[j].Nodes)
		}
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// maxNames is how many node names a reason group lists without -o wide.
const maxNames = 5

// PrintExplanation writes the explanation for people: the pod's demand, the
// verdict and the scheduler's message, the rejected nodes by reason, and
// the best feasible nodes with their scores per plugin (top, or all with
// wide).
func PrintExplanation(w io.Writer, e *replay.Explanation, source string, wide bool, top int) error {
	fmt.Fprintf(w, "Pod:      %s\n", e.Pod)
	fmt.Fprintf(w, "Profile:  %s (%s)\n", e.Profile, source)
	demand := strings.Join(e.Demand, ", ")
	if demand == "" {
		demand = "no devices"
	}
	if e.DemandError != "" {
		demand = "invalid: " + e.DemandError
	}
	fmt.Fprintf(w, "Devices:  %s\n", demand)
	selector := strings.Join(e.Selector, "; ")
	switch {
	case e.SelectorError != "":
		selector = "invalid: " + e.SelectorError
	case selector == "":
		selector = "any device"
	}
	fmt.Fprintf(w, "Selector: %s\n", selector)
	switch {
	case e.PreFilterPlugin != "":
		fmt.Fprintf(w, "Verdict:  unschedulable: %s rejects the pod before any node is judged\n  %s\n", e.PreFilterPlugin, e.Message)
		return nil
	case e.Chosen != "":
		fmt.Fprintf(w, "Verdict:  schedulable: the scheduler would choose %s\n", e.Chosen)
	default:
		fmt.Fprintf(w, "Verdict:  unschedulable\n  %s\n", e.Message)
	}
	tp := printers.NewTablePrinter(printers.PrintOptions{Wide: wide})
	if groups := GroupByReason(e); len(groups) > 0 {
		fmt.Fprintln(w, "\nRejected nodes, by reason:")
		t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Plugin", Type: "string"}, {Name: "Reason", Type: "string"},
			{Name: "Count", Type: "integer"}, {Name: "Nodes", Type: "string"},
		}}
		for _, g := range groups {
			names := g.Nodes
			more := ""
			if !wide && len(names) > maxNames {
				more = fmt.Sprintf(" and %d more", len(names)-maxNames)
				names = names[:maxNames]
			}
			t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{g.Plugin, g.Reason, int64(len(g.Nodes)), strings.Join(names, ",") + more}})
		}
		if err := tp.PrintObj(t, w); err != nil {
			return err
		}
	}
	return printScores(w, tp, e, wide, top)
}

// printScores writes the feasible nodes, best first, with each scoring
// plugin's weighted score.
func printScores(w io.Writer, tp printers.ResourcePrinter, e *replay.Explanation, wide bool, top int) error {
	var feasible []replay.NodeVerdict
	for _, v := range e.Nodes {
		if v.Feasible && v.Listed {
			feasible = append(feasible, v)
		}
	}
	if len(feasible) == 0 {
		return nil
	}
	sort.SliceStable(feasible, func(i, j int) bool {
		if feasible[i].Total != feasible[j].Total {
			return feasible[i].Total > feasible[j].Total
		}
		return feasible[i].Node < feasible[j].Node
	})
	title := fmt.Sprintf("\nFeasible nodes (%d), best first", len(feasible))
	if !wide && len(feasible) > top {
		title += fmt.Sprintf("; the top %d (all with -o wide)", top)
		feasible = feasible[:top]
	}
	fmt.Fprintln(w, title+":")
	var plugins []string
	seen := map[string]bool{}
	for _, v := range feasible {
		for _, s := range v.Scores {
			if !seen[s.Plugin] {
				seen[s.Plugin] = true
				plugins = append(plugins, s.Plugin)
			}
		}
	}
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Node", Type: "string"}, {Name: "Total", Type: "integer"}}}
	for _, p := range plugins {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: p, Type: "integer"})
	}
	for _, v := range feasible {
		cells := []any{v.Node, v.Total}
		for _, p := range plugins {
			var score int64
			for _, s := range v.Scores {
				if s.Plugin == p {
					score = s.Score
				}
			}
			cells = append(cells, score)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return tp.PrintObj(t, w)
}
