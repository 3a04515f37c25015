package perf

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// GangMix (issue 14, docs/placement.md): a seeded job mix of single pods and
// gangs arriving in a random order on a fleet of NVLink cliques, with more
// GPU demand than the fleet has, so that which clique a gang takes decides
// which gangs still find one whole later. scheduler_perf's templates have no
// random numbers, so the mix is generated here, per seed, and handed to the
// templates (config/templates/pod-gangmix.yaml, podgroup-gangmix.yaml) as
// workload parameters: one entry per pod, in arrival order, and one per gang.
//
// The workloads are appended to config/performance-config.yaml in a
// generated copy (gangMixConfig), labelled gangmix: `make bench-gangs`.

// gangMix fixes the fleet and the mix. Every seed uses the same.
var gangMix = struct {
	Cliques, NodesPerClique, GPUsPerNode int
	// Demand is the GPUs asked for over the fleet's GPUs.
	Demand float64
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
	// its GPU demand (whole jobs, in arrival order), percent: the state as
	// demand arrives. 100 is the whole mix.
	Arrived []int
}{
	Cliques: 10, NodesPerClique: 18, GPUsPerNode: 4,
	Demand:     1.25,
	GangShare:  0.15,
	GangPods:   []int{2, 4, 8, 16},
	SingleGPUs: []int{1, 2, 4},
	CPUPerGPU:  []int{4, 8, 16, 32},
	Seeds:      []uint64{42, 43, 44, 45, 46},
	Arrived:    []int{50, 100},
}

// gangMixCPUPerGPU gives every job the same cores per GPU (memory 4Gi per
// core) instead of drawing them: the mix where upstream's placement score
// (MostAllocated over CPU and memory) sees the GPUs' fill through the CPU.
var gangMixCPUPerGPU = flag.Int("gangmix-cpu-per-gpu", 0, "GangMix: every job's cores per GPU (0: drawn per job from 4, 8, 16, 32)")

// gangMixDefaultConfig replaces the upstream default profile of
// GangMix_Default (e.g. config/scheduler-config-default-mostallocated.yaml).
var gangMixDefaultConfig = flag.String("gangmix-default-config", "config/scheduler-config-default.yaml", "GangMix: the scheduler config of GangMix_Default")

// mixPod is one pod of the mix as the pod template reads it (strings: the
// template compares and prints them as they are).
type mixPod struct {
	Kind  string `json:"kind"`            // gang or single
	Group string `json:"group,omitempty"` // the PodGroup's name, gangs only
	Job   string `json:"job"`
	GPUs  string `json:"gpus"`
	CPU   string `json:"cpu"`
	Mem   string `json:"mem"`
}

// arrivedPrefix cuts the mix after the first jobs whose GPUs reach percent
// of its demand, never inside a gang.
func arrivedPrefix(pods []mixPod, groups []mixGroup, gpus, percent int) ([]mixPod, []mixGroup) {
	if percent >= 100 {
		return pods, groups
	}
	limit := gpus * percent / 100
	sum, n := 0, 0
	for n < len(pods) && sum < limit {
		job := pods[n].Job
		for n < len(pods) && pods[n].Job == job {
			g, _ := strconv.Atoi(pods[n].GPUs)
			sum += g
			n++
		}
	}
	pods = pods[:n]
	keep := 0
	for _, p := range pods {
		if p.Group != "" {
			keep = max(keep, groupIndex(p.Group)+1)
		}
	}
	return pods, groups[:keep]
}

func groupIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "gang-"))
	return i
}

// mixGroup is one gang's PodGroup.
type mixGroup struct {
	Name string `json:"name"`
	Pods string `json:"pods"`
}

// generateGangMix draws jobs until their GPUs reach Demand x the fleet's.
func generateGangMix(seed uint64) (pods []mixPod, groups []mixGroup, gpus int) {
	m := gangMix
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	capacity := m.Cliques * m.NodesPerClique * m.GPUsPerNode
	for job := 0; float64(gpus) < m.Demand*float64(capacity); job++ {
		cpuPerGPU := m.CPUPerGPU[rng.IntN(len(m.CPUPerGPU))]
		if *gangMixCPUPerGPU > 0 {
			// Drawn all the same: the jobs stay those of the seed.
			cpuPerGPU = *gangMixCPUPerGPU
		}
		if rng.Float64() < m.GangShare {
			n := m.GangPods[rng.IntN(len(m.GangPods))]
			name := fmt.Sprintf("gang-%d", len(groups))
			groups = append(groups, mixGroup{Name: name, Pods: strconv.Itoa(n)})
			for range n {
				pods = append(pods, podOf("gang", name, job, m.GPUsPerNode, cpuPerGPU))
			}
			gpus += n * m.GPUsPerNode
			continue
		}
		g := m.SingleGPUs[rng.IntN(len(m.SingleGPUs))]
		pods = append(pods, podOf("single", "", job, g, cpuPerGPU))
		gpus += g
	}
	return pods, groups, gpus
}

func podOf(kind, group string, job, gpus, cpuPerGPU int) mixPod {
	cpu := gpus * cpuPerGPU
	return mixPod{Kind: kind, Group: group, Job: strconv.Itoa(job), GPUs: strconv.Itoa(gpus),
		CPU: strconv.Itoa(cpu), Mem: fmt.Sprintf("%dGi", 4*cpu)}
}

// gangMixTestCases renders the GangMix_Default / GangMix_DeviceFit pair, one
// workload per seed, as YAML list items (JSON is YAML) to append to the
// performance config.
func gangMixTestCases() (string, error) {
	m := gangMix
	nodes := m.Cliques * m.NodesPerClique
	ops := []map[string]any{
		{"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": "config/templates/node-clique.yaml"},
		{"opcode": "createPodGroups", "namespace": "measure", "countParam": "$gangs",
			"templatePath": "config/templates/podgroup-gangmix.yaml", "templateParams": map[string]any{"Groups": "$groups"}},
		{"opcode": "startCollectingMetrics", "name": "measure", "namespaces": []string{"measure"}},
		{"opcode": "createPods", "namespace": "measure", "countParam": "$pods", "skipWaitToCompletion": true,
			"podTemplatePath": "config/templates/pod-gangmix.yaml",
			"templateParams":  map[string]any{"SchedulerName": "$schedulerName", "Pods": "$mix"}},
		// More demand than GPUs: not every pod binds. Attempted: every pod
		// went through a cycle (a gang's pods with the group's).
		{"opcode": "barrier", "namespaces": []string{"measure"}, "stageRequirement": "Attempted"},
		{"opcode": "stopCollectingMetrics"},
	}
	var b strings.Builder
	b.WriteString("\n# GangMix: generated by test/perf/gangmix_test.go (gangMixTestCases), not in this file.\n")
	for _, p := range []struct{ profile, config, scheduler string }{
		{"Default", *gangMixDefaultConfig, "default-scheduler"},
		{"DeviceFit", "../../manifests/scheduler-config.yaml", "devicefit"},
	} {
		var workloads []map[string]any
		for _, seed := range m.Seeds {
			for _, percent := range m.Arrived {
				all, allGroups, gpus := generateGangMix(seed)
				pods, groups := arrivedPrefix(all, allGroups, gpus, percent)
				workloads = append(workloads, map[string]any{
					"name":   fmt.Sprintf("%dNodes_seed%d_%dpct", nodes, seed, percent),
					"labels": []string{"gangmix"},
					"params": map[string]any{
						"nodes": nodes, "gangs": len(groups), "pods": len(pods),
						"groups": groups, "mix": pods, "schedulerName": p.scheduler,
					},
				})
			}
		}
		tc := map[string]any{
			"name":                   "GangMix_" + p.profile,
			"schedulerConfigPath":    p.config,
			"featureGates":           map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true},
			"metricsCollectorConfig": "@METRICS@",
			"workloadTemplate":       ops,
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
// different one for another, the demand reached, gangs and singles both there.
func TestGangMix(t *testing.T) {
	capacity := gangMix.Cliques * gangMix.NodesPerClique * gangMix.GPUsPerNode
	for _, seed := range gangMix.Seeds {
		pods, groups, gpus := generateGangMix(seed)
		again, _, _ := generateGangMix(seed)
		if !reflect.DeepEqual(pods, again) {
			t.Errorf("seed %d: two different mixes", seed)
		}
		if float64(gpus) < gangMix.Demand*float64(capacity) || len(groups) == 0 || len(groups) == len(pods) {
			t.Errorf("seed %d: %d GPUs of %d, %d groups, %d pods", seed, gpus, capacity, len(groups), len(pods))
		}
		var inGangs int
		for _, p := range pods {
			if p.Kind == "gang" {
				n, _ := strconv.Atoi(p.GPUs)
				inGangs += n
			}
		}
		t.Logf("seed %d: %d pods, %d gangs, %d GPUs (%d in gangs) of %d", seed, len(pods), len(groups), gpus, inGangs, capacity)
	}
	a, _, _ := generateGangMix(42)
	b, _, _ := generateGangMix(43)
	if reflect.DeepEqual(a, b) {
		t.Error("seeds 42 and 43 give the same mix")
	}
	if _, err := gangMixTestCases(); err != nil {
		t.Fatal(err)
	}
}

func TestArrivedPrefix(t *testing.T) {
	pods, groups, gpus := generateGangMix(42)
	half, halfGroups := arrivedPrefix(pods, groups, gpus, 50)
	sum := 0
	for _, p := range half {
		g, _ := strconv.Atoi(p.GPUs)
		sum += g
	}
	if sum < gpus/2 || len(half) >= len(pods) {
		t.Errorf("50%%: %d GPUs of %d, %d pods of %d", sum, gpus, len(half), len(pods))
	}
	if last := half[len(half)-1]; len(half) < len(pods) && pods[len(half)].Job == last.Job {
		t.Errorf("the cut splits job %s", last.Job)
	}
	seen := map[string]int{}
	for _, p := range half {
		if p.Group != "" {
			seen[p.Group]++
		}
	}
	if len(seen) != len(halfGroups) {
		t.Errorf("%d groups with pods, %d PodGroups", len(seen), len(halfGroups))
	}
	for _, g := range halfGroups {
		if n, _ := strconv.Atoi(g.Pods); seen[g.Name] != n {
			t.Errorf("group %s: %d pods in the prefix, %d in the gang", g.Name, seen[g.Name], n)
		}
	}
}
