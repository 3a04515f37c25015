package replay

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/devices"
)

// TestWriteClusterYAML: what snapshot writes reads back with the replay's
// own reader as the same fleet and pods, in creation order; what the
// format cannot carry is reported.
func TestWriteClusterYAML(t *testing.T) {
	nodes, pods := liveCluster()
	nodes = append(nodes, st.MakeNode().Name("cpu").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "3500m", v1.ResourceMemory: "7Gi"}).Obj())
	// Creation order: b before a; a's product annotation carries over.
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range pods {
		p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(len(pods)-i) * time.Second))
	}
	pods[0].Annotations = map[string]string{devices.AnnotationProducts: "NVIDIA-H100-80GB-HBM3, H200", devices.AnnotationMinMemory: "40Gi"}
	var out bytes.Buffer
	warnings, err := WriteClusterYAML(&out, nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{
		"nvidia.com/mig-1g.10gb of 1 nodes left out: the replay format knows only nvidia.com/gpu",
		"1 pods asking for nvidia.com/mig-1g.10gb left out: the replay format knows only nvidia.com/gpu",
		"1 devicefit.io annotations other than products left out: the replay format carries products only",
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	gotNodes, err := ReadNodesYAML("snapshot.yaml", out.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var nodeLines []string
	for _, n := range gotNodes {
		nodeLines = append(nodeLines, strings.Join([]string{n.Name, n.Model}, " ")+" "+itoa(n.GPUs)+" "+itoa(n.MilliCPU)+" "+itoa(n.MemoryMiB))
	}
	wantNodes := []string{
		"cpu  0 3500 7168",
		"h100-a NVIDIA-H100-80GB-HBM3 8 64000 524288",
		"h100-b NVIDIA-H100-80GB-HBM3 8 64000 524288",
		"l4 NVIDIA-L4-SHARED 16 64000 524288",
		"mig NVIDIA-A100-SXM4-80GB 1 64000 524288",
	}
	if diff := cmp.Diff(wantNodes, nodeLines); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	gotPods, err := ReadPodsYAML("snapshot.yaml", out.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var podLines []string
	for _, p := range gotPods {
		podLines = append(podLines, p.Name+" "+itoa(p.GPUs)+" "+strings.Join(p.Products, ","))
	}
	// The terminated pod and the MIG pod are left out; newest last.
	wantPods := []string{"ns.pending 8 ", "ns.b 3 ", "ns.a 4 H200,NVIDIA-H100-80GB-HBM3"}
	if diff := cmp.Diff(wantPods, podLines); diff != "" {
		t.Errorf("pods (-want +got):\n%s\n%s", diff, out.String())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// liveCluster is what a cluster's API holds: two H100 nodes, a time-sliced
// L4 node, a MIG node under the mixed strategy; bound, pending and
// terminated pods.
func liveCluster() ([]*v1.Node, []*v1.Pod) {
	gpuNode := func(name, product, gpus string) *v1.Node {
		return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", DeviceResource: gpus,
		}).Label(devices.LabelGPUProduct, product).Label(devices.LabelGPUCount, "8").Obj()
	}
	mig := st.MakeNode().Name("mig").Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", "nvidia.com/mig-1g.10gb": "7", DeviceResource: "1",
	}).Label(devices.LabelMIGStrategy, "mixed").Label(devices.LabelGPUProduct, "NVIDIA-A100-SXM4-80GB").Obj()
	pod := func(name, node string, res map[v1.ResourceName]string) *v1.Pod {
		return st.MakePod().Name(name).Namespace("ns").UID(name).Node(node).Res(res).Obj()
	}
	gpus := func(n string) map[v1.ResourceName]string {
		return map[v1.ResourceName]string{v1.ResourceCPU: "1", DeviceResource: n}
	}
	done := pod("done", "h100-b", gpus("8"))
	done.Status.Phase = v1.PodSucceeded
	return []*v1.Node{gpuNode("h100-b", "NVIDIA-H100-80GB-HBM3", "8"), gpuNode("h100-a", "NVIDIA-H100-80GB-HBM3", "8"),
			gpuNode("l4", "NVIDIA-L4-SHARED", "16"), mig},
		[]*v1.Pod{pod("a", "h100-a", gpus("4")), pod("b", "l4", gpus("3")),
			pod("c", "mig", map[v1.ResourceName]string{"nvidia.com/mig-1g.10gb": "2"}), pod("pending", "", gpus("8")), done}
}
