package perf

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// GangMix (issue 14, docs/placement.md): a seeded job mix of single pods and
// gangs arriving in waves on a fleet of NVLink cliques, each job leaving a
// few waves after it arrived, so that which clique a gang takes, and where
// single pods go, decide which gangs still find a clique whole later.
// scheduler_perf's templates have no random numbers, so the mix is generated
// here, per seed, and handed to the templates (config/templates/
// pod-gangmix.yaml, podgroup-gangmix.yaml) as workload parameters: per wave,
// one entry per pod, in arrival order, and one per gang.
//
// Wave w is one namespace (gangmix-w): before its jobs arrive, the jobs of
// earlier waves that end at w leave (deletePods by label, run or not: a
// job that waited its whole life gives up); after they arrive, a barrier
// waits until each of its pods had a cycle. scheduler_perf counts pods per
// namespace for its barriers and a deleted pod no longer counts, hence a
// namespace per wave. At the end the workload waits settle for the pods
// the last departures requeued, then the gang check reads the state.
//
// The workloads are appended to config/performance-config.yaml in a
// generated copy (gangMixConfig), labelled gangmix: `make bench-gangs`.

// gangMix fixes the fleet and the mix. Every seed uses the same.
var gangMix = struct {
	Cliques, NodesPerClique, GPUsPerNode int
	// Waves of arrivals; WaveDemand is the GPUs each wave asks for over
	// the fleet's GPUs.
	Waves      int
	WaveDemand float64
	// Lifetimes: each job leaves this many waves after it arrived (drawn
	// uniformly), so the fleet holds about WaveDemand x their mean (0.75
	// of its GPUs) once the first waves have left: busy, not saturated,
	// where the domains a placement keeps whole can be counted.
	Lifetimes []int
	// GangShare is the probability that a job is a gang.
	GangShare float64
	// GangPods are the gang sizes (drawn uniformly); every gang pod takes a
	// whole 4-GPU tray.
	GangPods []int
	// SingleGPUs are the single-pod jobs' sizes (drawn uniformly).
	SingleGPUs []int
	// CPUPerGPU: each job draws its cores per GPU from these (memory 4Gi
	// per core); the tray has 144 cores, so CPU never runs out before GPUs.
	CPUPerGPU []int
	Seeds     []uint64
	// Arrived: each seed also runs with the mix cut after this share of
	// its waves, percent: the state as demand arrives. 100 is the whole mix.
	Arrived []int
	// Settle is how long the workload waits after the last wave: longer
	// than the scheduler's longest pod backoff (podMaxBackoffSeconds, 10 s
	// by default), so that every pod the last departures requeued has
	// had its next cycle.
	Settle string
}{
	Cliques: 10, NodesPerClique: 18, GPUsPerNode: 4,
	Waves: 8, WaveDemand: 0.3,
	Lifetimes:  []int{1, 2, 3, 4},
	GangShare:  0.15,
	GangPods:   []int{2, 4, 8, 16},
	SingleGPUs: []int{1, 2, 4},
	CPUPerGPU:  []int{4, 8, 16, 32},
	Seeds:      []uint64{42, 43, 44, 45, 46},
	Arrived:    []int{25, 50, 100},
	Settle:     "12s",
}

// gangMixCPUPerGPU gives every job the same cores per GPU (memory 4Gi per
// core) instead of drawing them: the mix where upstream's placement score
// (MostAllocated over CPU and memory) sees the GPUs' fill through the CPU.
var gangMixCPUPerGPU = flag.Int("gangmix-cpu-per-gpu", 0, "GangMix: every job's cores per GPU (0: drawn per job from 4, 8, 16, 32)")

// gangMixDefaultConfig replaces the upstream default profile of
// GangMix_Default (e.g. config/scheduler-config-default-mostallocated.yaml).
var gangMixDefaultConfig = flag.String("gangmix-default-config", "config/scheduler-config-default.yaml", "GangMix: the scheduler config of GangMix_Default")

// endsLabel is the wave at whose start a pod's job leaves.
const endsLabel = "perf.devicefit.io/ends"

// mixPod is one pod of the mix as the pod template reads it (strings: the
// template compares and prints them as they are).
type mixPod struct {
	Kind  string `json:"kind"`            // gang or single
	Group string `json:"group,omitempty"` // the PodGroup's name, gangs only
	Job   string `json:"job"`
	GPUs  string `json:"gpus"`
	CPU   string `json:"cpu"`
	Mem   string `json:"mem"`
	Ends  string `json:"ends"` // endsLabel's value
}

// mixGroup is one gang's PodGroup.
type mixGroup struct {
	Name string `json:"name"`
	Pods string `json:"pods"`
}

// mixWave is what arrives in one wave.
type mixWave struct {
	Pods   []mixPod
	Groups []mixGroup
}

// arrivedWaves is the first percent of the waves (at least one).
func arrivedWaves(waves []mixWave, percent int) []mixWave {
	return waves[:max(1, min(len(waves), len(waves)*percent/100))]
}

// generateGangMix draws each wave's jobs until their GPUs reach WaveDemand x
// the fleet's, and each job's lifetime.
func generateGangMix(seed uint64) (waves []mixWave, gpus int) {
	m := gangMix
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	capacity := m.Cliques * m.NodesPerClique * m.GPUsPerNode
	job, groups := 0, 0
	for w := range m.Waves {
		var wave mixWave
		for inWave := 0; float64(inWave) < m.WaveDemand*float64(capacity); job++ {
			cpuPerGPU := m.CPUPerGPU[rng.IntN(len(m.CPUPerGPU))]
			if *gangMixCPUPerGPU > 0 {
				// Drawn all the same: the jobs stay those of the seed.
				cpuPerGPU = *gangMixCPUPerGPU
			}
			ends := strconv.Itoa(w + m.Lifetimes[rng.IntN(len(m.Lifetimes))])
			n, perPod, group := 1, m.SingleGPUs[rng.IntN(len(m.SingleGPUs))], ""
			if rng.Float64() < m.GangShare {
				n, perPod = m.GangPods[rng.IntN(len(m.GangPods))], m.GPUsPerNode
				group = fmt.Sprintf("gang-%d", groups)
				groups++
				wave.Groups = append(wave.Groups, mixGroup{Name: group, Pods: strconv.Itoa(n)})
			}
			for range n {
				wave.Pods = append(wave.Pods, podOf(group, job, perPod, cpuPerGPU, ends))
			}
			inWave += n * perPod
		}
		waves = append(waves, wave)
	}
	for _, w := range waves {
		for _, p := range w.Pods {
			g, _ := strconv.Atoi(p.GPUs)
			gpus += g
		}
	}
	return waves, gpus
}

func podOf(group string, job, gpus, cpuPerGPU int, ends string) mixPod {
	kind := "single"
	if group != "" {
		kind = "gang"
	}
	cpu := gpus * cpuPerGPU
	return mixPod{Kind: kind, Group: group, Job: strconv.Itoa(job), GPUs: strconv.Itoa(gpus),
		CPU: strconv.Itoa(cpu), Mem: fmt.Sprintf("%dGi", 4*cpu), Ends: ends}
}

// stayAfter returns pods with every job that ends at wave cut or later
// kept to the end: a workload cut after cut waves still runs the later
// waves' departures (the template is the same for every cut), which must
// not remove what was there when the cut came.
func stayAfter(pods []mixPod, cut int) []mixPod {
	out := slices.Clone(pods)
	for i := range out {
		if e, _ := strconv.Atoi(out[i].Ends); e >= cut {
			out[i].Ends = "never"
		}
	}
	return out
}

func waveNamespace(w int) string { return fmt.Sprintf("gangmix-%d", w) }

// gangMixOps is the workload template: per wave, the departures, the
// wave's PodGroups and pods, a barrier; then the settling wait.
func gangMixOps() []map[string]any {
	m := gangMix
	var namespaces []string
	for w := range m.Waves {
		namespaces = append(namespaces, waveNamespace(w))
	}
	ops := []map[string]any{
		{"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": "config/templates/node-clique.yaml"},
		{"opcode": "startCollectingMetrics", "name": "measure", "namespaces": namespaces},
	}
	longest := slices.Max(m.Lifetimes)
	for w := range m.Waves {
		for from := max(0, w-longest); from < w; from++ {
			ops = append(ops, map[string]any{"opcode": "deletePods", "namespace": waveNamespace(from),
				"labelSelector": map[string]string{endsLabel: strconv.Itoa(w)}})
		}
		n := strconv.Itoa(w)
		ops = append(ops,
			map[string]any{"opcode": "createPodGroups", "namespace": waveNamespace(w), "countParam": "$gangs" + n,
				"templatePath": "config/templates/podgroup-gangmix.yaml", "templateParams": map[string]any{"Groups": "$groups" + n}},
			map[string]any{"opcode": "createPods", "namespace": waveNamespace(w), "countParam": "$pods" + n, "skipWaitToCompletion": true,
				"podTemplatePath": "config/templates/pod-gangmix.yaml",
				"templateParams":  map[string]any{"SchedulerName": "$schedulerName", "Pods": "$mix" + n}},
			// More demand than room: not every pod binds. Attempted:
			// every pod went through a cycle (a gang's with the group's).
			map[string]any{"opcode": "barrier", "namespaces": []string{waveNamespace(w)}, "stageRequirement": "Attempted"})
	}
	return append(ops,
		map[string]any{"opcode": "sleep", "duration": m.Settle},
		map[string]any{"opcode": "stopCollectingMetrics"})
}

// gangMixTestCases renders the GangMix_Default / GangMix_DeviceFit pair, one
// workload per seed and arrival share, as YAML list items (JSON is YAML) to
// append to the performance config. A workload cut before the last wave
// has no pods in the waves after its cut (their PodGroups stay empty).
func gangMixTestCases() (string, error) {
	m := gangMix
	nodes := m.Cliques * m.NodesPerClique
	var b strings.Builder
	b.WriteString("\n# GangMix: generated by test/perf/gangmix_test.go (gangMixTestCases), not in this file.\n")
	for _, p := range []struct{ profile, config, scheduler string }{
		{"Default", *gangMixDefaultConfig, "default-scheduler"},
		{"DeviceFit", "../../manifests/scheduler-config.yaml", "devicefit"},
	} {
		var workloads []map[string]any
		for _, seed := range m.Seeds {
			all, _ := generateGangMix(seed)
			for _, percent := range m.Arrived {
				params := map[string]any{"nodes": nodes, "schedulerName": p.scheduler}
				arrived := arrivedWaves(all, percent)
				for w, wave := range all {
					if len(wave.Groups) == 0 {
						// createPodGroups refuses a count of 0.
						return "", fmt.Errorf("seed %d: wave %d has no gang", seed, w)
					}
					// Every wave's PodGroups, even past the cut: a
					// group without pods counts for nothing
					// (checkGangs).
					n := strconv.Itoa(w)
					params["gangs"+n], params["groups"+n] = len(wave.Groups), wave.Groups
					params["pods"+n], params["mix"+n] = 0, []mixPod{}
					if w < len(arrived) {
						params["pods"+n], params["mix"+n] = len(wave.Pods), stayAfter(wave.Pods, len(arrived))
					}
				}
				workloads = append(workloads, map[string]any{
					"name":   fmt.Sprintf("%dNodes_seed%d_%dpct", nodes, seed, percent),
					"labels": []string{"gangmix"},
					"params": params,
				})
			}
		}
		tc := map[string]any{
			"name":                   "GangMix_" + p.profile,
			"schedulerConfigPath":    p.config,
			"featureGates":           map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true},
			"metricsCollectorConfig": "@METRICS@",
			"workloadTemplate":       gangMixOps(),
			"workloads":              workloads,
		}
		data, err := json.Marshal(tc)
		if err != nil {
			return "", err
		}
		b.WriteString("- ")
		// The alias of the metrics the other test cases collect.
		b.WriteString(strings.Replace(string(data), `"@METRICS@"`, "*metrics", 1))
		b.WriteString("\n")
	}
	return b.String(), nil
}

// gangMixConfig writes configFile with the GangMix pair appended into dir
// and returns its path. The paths inside stay relative to this package
// directory, where go test runs.
func gangMixConfig(dir string) (string, error) {
	base, err := os.ReadFile(configFile)
	if err != nil {
		return "", err
	}
	extra, err := gangMixTestCases()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "performance-config-gangmix.yaml")
	return path, os.WriteFile(path, append(base, []byte(extra)...), 0o644)
}

// TestGangMix checks the generator: the same mix for the same seed, a
// different one for another, each wave's demand reached, gangs and singles
// both there, every job leaving after it arrived and whole.
func TestGangMix(t *testing.T) {
	capacity := gangMix.Cliques * gangMix.NodesPerClique * gangMix.GPUsPerNode
	for _, seed := range gangMix.Seeds {
		waves, gpus := generateGangMix(seed)
		again, _ := generateGangMix(seed)
		if !reflect.DeepEqual(waves, again) {
			t.Errorf("seed %d: two different mixes", seed)
		}
		if len(waves) != gangMix.Waves {
			t.Fatalf("seed %d: %d waves", seed, len(waves))
		}
		var pods, groups, inGangs int
		for w, wave := range waves {
			var demand int
			ends := map[string]string{}
			for _, p := range wave.Pods {
				g, _ := strconv.Atoi(p.GPUs)
				demand += g
				if p.Kind == "gang" {
					inGangs += g
				}
				e, _ := strconv.Atoi(p.Ends)
				if e <= w || e > w+slices.Max(gangMix.Lifetimes) {
					t.Errorf("seed %d wave %d: a pod of job %s ends at %d", seed, w, p.Job, e)
				}
				if prev, seen := ends[p.Job]; seen && prev != p.Ends {
					t.Errorf("seed %d: job %s ends at %s and %s", seed, p.Job, prev, p.Ends)
				}
				ends[p.Job] = p.Ends
			}
			if float64(demand) < gangMix.WaveDemand*float64(capacity) {
				t.Errorf("seed %d wave %d: %d GPUs, want %.0f", seed, w, demand, gangMix.WaveDemand*float64(capacity))
			}
			pods += len(wave.Pods)
			groups += len(wave.Groups)
		}
		if groups == 0 || inGangs == gpus {
			t.Errorf("seed %d: %d groups, %d of %d GPUs in gangs", seed, groups, inGangs, gpus)
		}
		t.Logf("seed %d: %d pods, %d gangs, %d GPUs (%d in gangs) over %d waves of a %d-GPU fleet", seed, pods, groups, gpus, inGangs, len(waves), capacity)
	}
	a, _ := generateGangMix(42)
	b, _ := generateGangMix(43)
	if reflect.DeepEqual(a, b) {
		t.Error("seeds 42 and 43 give the same mix")
	}
	if _, err := gangMixTestCases(); err != nil {
		t.Fatal(err)
	}
}

// TestGangMixGroups checks that a wave's PodGroups are exactly the groups
// its gang pods name, each with its pod count, and that the arrival cuts
// keep whole waves.
func TestGangMixGroups(t *testing.T) {
	waves, _ := generateGangMix(42)
	for w, wave := range waves {
		seen := map[string]int{}
		for _, p := range wave.Pods {
			if p.Group != "" {
				seen[p.Group]++
			}
		}
		if len(seen) != len(wave.Groups) {
			t.Errorf("wave %d: %d groups with pods, %d PodGroups", w, len(seen), len(wave.Groups))
		}
		for _, g := range wave.Groups {
			if n, _ := strconv.Atoi(g.Pods); seen[g.Name] != n {
				t.Errorf("wave %d group %s: %d pods, minCount %d", w, g.Name, seen[g.Name], n)
			}
		}
	}
	// A cut workload keeps what was there at the cut: no pod of its
	// waves leaves at the cut or after (the later waves' departures still
	// run), and those that leave before it still do.
	cut := len(arrivedWaves(waves, 25))
	var leaving int
	for _, wave := range waves[:cut] {
		for _, p := range stayAfter(wave.Pods, cut) {
			if p.Ends == "never" {
				continue
			}
			if e, _ := strconv.Atoi(p.Ends); e >= cut {
				t.Errorf("cut after %d waves: a pod of job %s leaves at wave %d", cut, p.Job, e)
			}
			leaving++
		}
	}
	if leaving == 0 {
		t.Errorf("cut after %d waves: no job leaves before the cut", cut)
	}
	for percent, want := range map[int]int{25: 2, 50: 4, 100: 8, 1: 1} {
		if got := len(arrivedWaves(waves, percent)); got != want {
			t.Errorf("%d%%: %d waves, want %d", percent, got, want)
		}
	}
}
