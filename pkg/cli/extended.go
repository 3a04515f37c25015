package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/devicefit/devicefit/pkg/dra"
	"github.com/devicefit/devicefit/pkg/plugins/devicefit"
)

// ExtendedResourceRow is an extended resource DeviceClasses name
// (KEP-5004) and the class serving it: as a kube-scheduler that lists the
// classes now resolves it (dra.NewResolver, upstream's own cache), and, in
// Unserved, the pending pods whose scheduler message says the running
// scheduler serves it by no class. The two differ after a class naming the
// resource was deleted: the running scheduler's cache forgot the name, a
// restarted one would not (docs/dra.md).
type ExtendedResourceRow struct {
	dra.ExtendedResource `json:",inline"`
	Unserved             []string `json:"unservedFor,omitempty"`
}

// ExtendedResources lists the extended resources the classes of objects
// name, each with its class, and the pods among pods that the scheduler
// left pending because no class serves it (DeviceFit's message,
// devicefit.UnservedText). Nil without DRA objects.
func ExtendedResources(objects *dra.Objects, pods []*v1.Pod) []ExtendedResourceRow {
	if objects == nil {
		return nil
	}
	var out []ExtendedResourceRow
	for _, e := range dra.ExtendedResources(objects.Classes, objects.DeviceClassResolver()) {
		row := ExtendedResourceRow{ExtendedResource: e}
		for _, p := range pods {
			if p.Spec.NodeName == "" && strings.Contains(scheduledMessage(p), " "+string(e.Name)+"; "+devicefit.UnservedText) {
				row.Unserved = append(row.Unserved, p.Namespace+"/"+p.Name)
			}
		}
		out = append(out, row)
	}
	return out
}

// scheduledMessage is the message of the pod's PodScheduled condition.
func scheduledMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// Asked keeps the rows of the resources pod requests (any container, init
// container or overhead).
func Asked(rows []ExtendedResourceRow, pod *v1.Pod) []ExtendedResourceRow {
	asks := func(name v1.ResourceName) bool {
		if _, ok := pod.Spec.Overhead[name]; ok {
			return true
		}
		for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				_, req := c.Resources.Requests[name]
				_, lim := c.Resources.Limits[name]
				if req || lim {
					return true
				}
			}
		}
		return false
	}
	return slices.DeleteFunc(slices.Clone(rows), func(r ExtendedResourceRow) bool { return !asks(r.Name) })
}

// ExtendedWarnings says what an operator must know of rows: a resource
// served by no class, and a resource several classes name, which the
// scheduler forgets when either class is deleted.
func ExtendedWarnings(rows []ExtendedResourceRow) []string {
	var out []string
	for _, r := range rows {
		named := strings.Join(r.Named, ", ")
		switch {
		case len(r.Unserved) > 0:
			out = append(out, fmt.Sprintf("%s is served by no DeviceClass in the running scheduler's view, though DeviceClass %s names it (%d pending pods, e.g. %s): "+
				"update DeviceClass %s (any change, e.g. an annotation) or restart the scheduler (docs/dra.md)",
				r.Name, named, len(r.Unserved), r.Unserved[0], r.Named[0]))
		case r.Class == "":
			out = append(out, fmt.Sprintf("%s is served by no DeviceClass in the scheduler's view, though DeviceClass %s names it (docs/dra.md)", r.Name, named))
		case len(r.Named) > 1:
			out = append(out, fmt.Sprintf("%s is named by %d DeviceClasses (%s); %s serves it, the newest: deleting any of them leaves %s served by none "+
				"in a running kube-scheduler until the one to keep is updated (docs/dra.md)", r.Name, len(r.Named), named, r.Class, r.Name))
		}
	}
	return out
}

// PrintExtendedResources writes rows as a table under a heading; nothing
// when there are none.
func PrintExtendedResources(w io.Writer, rows []ExtendedResourceRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nExtended resources served by DeviceClasses (KEP-5004):")
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Resource", Type: "string"}, {Name: "Served by", Type: "string"}, {Name: "Named by", Type: "string"},
	}}
	for _, r := range rows {
		class := r.Class
		switch {
		case len(r.Unserved) > 0:
			class = "<none in the running scheduler>"
		case class == "":
			class = "<none>"
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{string(r.Name), class, strings.Join(r.Named, ",")}})
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, w)
}
