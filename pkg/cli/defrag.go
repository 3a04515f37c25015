package cli

import (
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/devicefit/devicefit/pkg/devices"
	"github.com/devicefit/devicefit/pkg/metrics"
	"github.com/devicefit/devicefit/pkg/replay"
)

// Figures are the cluster-wide device counts a plan changes.
type Figures struct {
	Free     int64   `json:"free"`
	Stranded float64 `json:"stranded"`
	// WholeFreeNodes are the nodes with devices none of which is allocated.
	WholeFreeNodes int `json:"wholeFreeNodes"`
}

// DefragReport is a plan (for a pod, or for whole-free nodes) with the
// figures before and after it.
type DefragReport struct {
	Plan      *replay.DefragPlan    `json:"plan,omitempty"`
	FreeNodes *replay.FreeNodesPlan `json:"freeNodes,omitempty"`
	Before    Figures               `json:"before"`
	After     Figures               `json:"after"`
}

// FiguresOf counts free and stranded devices (devicefit_devices' measure)
// and whole-free device nodes.
func FiguresOf(nodes []*v1.Node, pods []*v1.Pod, set devices.ResourceSet, w *devices.Workload) Figures {
	var f Figures
	s := metrics.Summarize(nodes, pods, set, w)
	for _, k := range s.Keys() {
		f.Free += s.Devices[k].Free
		f.Stranded += s.Devices[k].Stranded
	}
	inv := BuildInventory(nodes, pods, set, nil, nil, ByNode)
	busy := map[string]bool{}
	for _, r := range inv.Rows {
		if r.Allocated > 0 {
			busy[r.Node] = true
		}
	}
	seen := map[string]bool{}
	for _, r := range inv.Rows {
		if r.Allocatable > 0 && !busy[r.Node] && !seen[r.Node] {
			seen[r.Node] = true
			f.WholeFreeNodes++
		}
	}
	return f
}

// AfterMoves is pods as they would be once the moves are done, and, when
// target is set, it is bound to node.
func AfterMoves(pods []*v1.Pod, moves []replay.Move, target, node string) []*v1.Pod {
	to := map[string]string{}
	for _, m := range moves {
		to[m.Pod] = m.To
	}
	if target != "" {
		to[target] = node
	}
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		if node, ok := to[p.Namespace+"/"+p.Name]; ok {
			p = p.DeepCopy()
			p.Spec.NodeName = node
		}
		out[i] = p
	}
	return out
}

// PrintDefrag writes the plan for people: the moves, then the figures.
func PrintDefrag(w io.Writer, r *DefragReport) error {
	var moves []replay.Move
	if p := r.Plan; p != nil {
		switch {
		case !p.Fits:
			fmt.Fprintf(w, "No plan for %s: %s.\n", p.Target, p.Reason)
			return nil
		case len(p.Moves) == 0:
			fmt.Fprintf(w, "%s fits now (on %s, for one): nothing to move.\n", p.Target, p.Node)
			return nil
		}
		fmt.Fprintf(w, "%s fits on %s after %d move(s):\n", p.Target, p.Node, len(p.Moves))
		moves = p.Moves
	}
	if p := r.FreeNodes; p != nil {
		switch {
		case !p.Done:
			fmt.Fprintf(w, "No plan for %d whole-free node(s): %s.\n", p.Want, p.Reason)
			return nil
		case len(p.Moves) == 0:
			fmt.Fprintf(w, "%d node(s) are whole-free now (%s): nothing to move.\n", p.Want, strings.Join(p.Free, ", "))
			return nil
		}
		fmt.Fprintf(w, "%s whole-free after %d move(s):\n", strings.Join(p.Free, ", "), len(p.Moves))
		moves = p.Moves
	}
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Pod", Type: "string"}, {Name: "From", Type: "string"}, {Name: "To", Type: "string"}, {Name: "Devices", Type: "string"},
	}}
	for _, m := range moves {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{m.Pod, m.From, m.To, strings.Join(m.Devices, ", ")}})
	}
	if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nDevices         before   after\n")
	fmt.Fprintf(w, "  free          %6d  %6d\n", r.Before.Free, r.After.Free)
	fmt.Fprintf(w, "  stranded      %6.2f  %6.2f\n", r.Before.Stranded, r.After.Stranded)
	fmt.Fprintf(w, "  whole-free nodes %3d  %6d\n", r.Before.WholeFreeNodes, r.After.WholeFreeNodes)
	fmt.Fprintln(w, "\n(\"To\" is where the profile would place each recreated pod; the scheduler decides when it runs.)")
	return nil
}
