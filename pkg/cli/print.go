package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// GroupVersion of the objects the plugin prints with -o json|yaml. They
// are reports, not API objects: no server serves them.
var GroupVersion = schema.GroupVersion{Group: "devicefit.io", Version: "v1alpha1"}

// Output formats the plugin prints itself; the rest (json, yaml, jsonpath,
// go-template, ...) are cli-runtime's printers.
const (
	OutputTable = "table"
	OutputWide  = "wide"
)

// Printer prints a report as a table (-o table, the default, or wide) or
// through cli-runtime's printers (-o json, yaml, jsonpath=..., ...).
type Printer struct {
	Flags *genericclioptions.PrintFlags
}

// NewPrinter returns a Printer whose flags accept table and wide besides
// cli-runtime's formats.
func NewPrinter() *Printer {
	return &Printer{Flags: genericclioptions.NewPrintFlags("").WithDefaultOutput(OutputTable)}
}

// Validate rejects an unknown -o before anything is read from the cluster.
func (p *Printer) Validate() error {
	switch p.format() {
	case OutputTable, OutputWide:
		return nil
	}
	_, err := p.Flags.ToPrinter()
	if err != nil {
		return fmt.Errorf("-o %s: %w (also allowed: table, wide)", p.format(), err)
	}
	return nil
}

func (p *Printer) format() string {
	if p.Flags.OutputFormat == nil || *p.Flags.OutputFormat == "" {
		return OutputTable
	}
	return *p.Flags.OutputFormat
}

// Print writes table (for -o table and wide) or report (for the other
// formats, as an object of kind) to w.
func (p *Printer) Print(w io.Writer, table *metav1.Table, kind string, report any) error {
	switch f := p.format(); f {
	case OutputTable, OutputWide:
		return printers.NewTablePrinter(printers.PrintOptions{Wide: f == OutputWide}).PrintObj(table, w)
	}
	obj, err := toObject(kind, report)
	if err != nil {
		return err
	}
	printer, err := p.Flags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, w)
}

// toObject makes report (a struct with json tags, or a pointer to one) an
// object of kind in GroupVersion.
func toObject(kind string, report any) (runtime.Object, error) {
	data, err := json.Marshal(report)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(GroupVersion.WithKind(kind))
	return u, nil
}

// column is a table column; wide ones (priority 1) show with -o wide.
func column(name, typ, desc string, wide bool) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
	if wide {
		c.Priority = 1
	}
	return c
}

// InventoryTable is the inventory as a table: one row per product (or per
// node and product), then the totals per resource.
func InventoryTable(inv Inventory) *metav1.Table {
	t := &metav1.Table{}
	if inv.By == ByNode {
		t.ColumnDefinitions = append(t.ColumnDefinitions, column("Node", "string", "the node", false))
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		column("Resource", "string", "the device resource", false),
		column("Product", "string", "GFD's product label of the nodes", false),
	)
	if inv.By != ByNode {
		t.ColumnDefinitions = append(t.ColumnDefinitions, column("Nodes", "integer", "nodes advertising the resource", false))
	}
	t.ColumnDefinitions = append(t.ColumnDefinitions,
		column("Allocatable", "integer", "devices advertised for pods", false),
		column("Allocated", "integer", "devices the bound pods request", false),
		column("Free", "integer", "allocatable minus allocated, per node", false),
		column("Stranded", "number", "expected free devices no job of the workload could use where they are", false),
		column("MIG", "string", "GFD's MIG strategy", true),
		column("Replicas", "string", "pods per physical device under time-slicing or MPS", true),
		column("Physical", "integer", "physical devices (or MIG slices) GFD counts", true),
	)
	row := func(r InventoryRow, product string) metav1.TableRow {
		var cells []any
		if inv.By == ByNode {
			cells = append(cells, r.Node)
		}
		cells = append(cells, r.Resource, product)
		if inv.By != ByNode {
			cells = append(cells, int64(r.Nodes))
		}
		return metav1.TableRow{Cells: append(cells, r.Allocatable, r.Allocated, r.Free, strconv.FormatFloat(r.Stranded, 'f', 2, 64),
			dash(r.MIGStrategy), replicasText(r.Replicas), r.Physical)}
	}
	for _, r := range inv.Rows {
		t.Rows = append(t.Rows, row(r, r.Product))
	}
	for _, r := range inv.Totals {
		r.Node = "(all)"
		t.Rows = append(t.Rows, row(r, "(total)"))
	}
	return t
}

// PoolTable is the DRA pools as a table.
func PoolTable(pools []PoolRow) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Driver", "string", "the DRA driver", false),
		column("Pool", "string", "the resource pool", false),
		column("Node", "string", "the node of a node-local pool", false),
		column("Devices", "integer", "devices in the pool's newest generation", false),
		column("Allocated", "integer", "devices allocated to claims", false),
		column("Free", "integer", "devices no claim holds", false),
		column("Shareable", "integer", "devices that allow multiple allocations", true),
		column("Slices", "integer", "ResourceSlices of the newest generation", true),
		column("Complete", "string", "all the pool's slices are published", true),
	}}
	for _, p := range pools {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{p.Driver, p.Pool, dash(p.Node), int64(p.Devices), int64(p.Allocated),
			int64(p.Free), int64(p.Shareable), int64(p.Slices), strconv.FormatBool(p.Complete)}})
	}
	return t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func replicasText(n int64) string {
	switch {
	case n < 0:
		return "various"
	case n == 0:
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
