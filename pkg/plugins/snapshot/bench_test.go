package snapshot

import (
	"fmt"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// BenchmarkRefresh is one cycle's refresh of a fleet after one pod was
// bound (a new generation on one node), as each scheduling cycle follows
// the last one's assumed pod: reading only the rows that moved, and
// reading every row (the cycle after a pod-group cycle, and before
// readMoved). Compare the two within one run:
// `go test ./pkg/plugins/snapshot -run '^$' -bench Refresh`.
func BenchmarkRefresh(b *testing.B) {
	for _, size := range []int{5000, 15000} {
		infos := make([]*framework.NodeInfo, size)
		nodes := make([]fwk.NodeInfo, size)
		for j := range infos {
			infos[j] = framework.NewNodeInfo(gpuPod(fmt.Sprint("p", j), "1"))
			infos[j].SetNode(gpuNode(fmt.Sprint("n", j)))
			nodes[j] = infos[j]
		}
		for _, mode := range []string{"moved", "moved-cold", "all"} {
			b.Run(fmt.Sprintf("%dNodes/%s", size, mode), func(b *testing.B) {
				table := NewTable(newSet(b))
				table.Refresh(framework.NewCycleState(), nodes)
				i := 0
				for b.Loop() {
					infos[i%size].AddPod(gpuPod(fmt.Sprint("b", i), "0"))
					cs := framework.NewCycleState()
					if mode == "all" {
						// As after a pod-group cycle.
						table.readInGroup = true
					}
					if mode == "moved-cold" {
						// As in the scheduler, whose cycle between two
						// refreshes (and the API server beside it) leaves
						// little of the table in the core's caches.
						b.StopTimer()
						evictCaches()
						b.StartTimer()
					}
					table.Refresh(cs, nodes)
					i++
				}
			})
		}
	}
}

// evictBuffer is larger than this machine's L2 (2 MiB a core).
var evictBuffer = make([]byte, 16<<20)

// evictCaches writes a buffer larger than a core's L2.
func evictCaches() {
	for i := 0; i < len(evictBuffer); i += 64 {
		evictBuffer[i]++
	}
}
