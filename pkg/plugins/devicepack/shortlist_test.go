package devicepack

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/devicefit/devicefit/pkg/plugins/snapshot"
)

func TestPodShortlistable(t *testing.T) {
	pvc := v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
	token := v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"a plain GPU pod", gpuPod("p", "1"), true},
		{"required node affinity and a node selector (judged per node)",
			st.MakePod().Name("p").NodeSelector(map[string]string{"pool": "a"}).NodeAffinityIn("zone", []string{"z1"}, st.NodeSelectorTypeMatchExpressions).Obj(), true},
		{"the service account token volume", st.MakePod().Name("p").Volume(token).Obj(), true},
		{"bound to a node already", st.MakePod().Name("p").Node("n1").Obj(), false},
		{"nominated by preemption", st.MakePod().Name("p").NominatedNodeName("n1").Obj(), false},
		{"resource claims (DynamicResources allocates in Filter)", st.MakePod().Name("p").PodResourceClaims(v1.PodResourceClaim{Name: "gpu"}).Obj(), false},
		{"topology spread", st.MakePod().Name("p").SpreadConstraint(1, "zone", v1.ScheduleAnyway, nil, nil, nil, nil, nil).Obj(), false},
		{"inter-pod affinity", st.MakePod().Name("p").PodAffinityExists("app", "zone", st.PodAffinityWithRequiredReq).Obj(), false},
		{"inter-pod anti-affinity", st.MakePod().Name("p").PodAntiAffinityExists("app", "zone", st.PodAntiAffinityWithPreferredReq).Obj(), false},
		{"a persistent volume claim", st.MakePod().Name("p").Volume(pvc).Obj(), false},
		{"a host port", st.MakePod().Name("p").ContainerPort([]v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}).Obj(), false},
	}
	pl := &DevicePack{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pl.podShortlistable(tc.pod); got != tc.want {
				t.Errorf("podShortlistable = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("preferred node affinity", func(t *testing.T) {
		pod := gpuPod("p", "1")
		pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}}
		if pl.podShortlistable(pod) {
			t.Error("a pod with preferred node affinity is shortlistable: NodeAffinity's Score tells nodes apart")
		}
	})
}

// request is a pod request as NodeResourcesFit's PreFilter state exposes it.
type request struct {
	cpu, mem, storage int64
	scalars           map[v1.ResourceName]int64
}

func (r request) GetMilliCPU() int64                            { return r.cpu }
func (r request) GetMemory() int64                              { return r.mem }
func (r request) GetEphemeralStorage() int64                    { return r.storage }
func (r request) GetScalarResources() map[v1.ResourceName]int64 { return r.scalars }

func TestFits(t *testing.T) {
	full := framework.NewNodeInfo()
	full.SetNode(st.MakeNode().Name("full").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "64", v1.ResourceMemory: "512Gi", v1.ResourcePods: "1", gpu: "8"}).Obj())
	full.AddPod(st.MakePod().Name("r").UID("r").Node("full").Obj())
	tests := []struct {
		name string
		req  request
		node fwk.NodeInfo
		want bool
	}{
		{"GPUs free", request{cpu: 1000, mem: 1 << 30, scalars: map[v1.ResourceName]int64{gpu: 4}}, gpuNodeInfo("n", "A100", "81920", "8", "4"), true},
		{"too few GPUs free", request{cpu: 1000, scalars: map[v1.ResourceName]int64{gpu: 5}}, gpuNodeInfo("n", "A100", "81920", "8", "4"), false},
		{"no GPU on the node", request{scalars: map[v1.ResourceName]int64{gpu: 1}}, cpuNodeInfo("c"), false},
		{"too much CPU", request{cpu: 64000}, gpuNodeInfo("n", "A100", "81920", "8", "1"), false},
		{"all the CPU left", request{cpu: 63000}, gpuNodeInfo("n", "A100", "81920", "8", "1"), true},
		{"too much memory", request{mem: 513 << 30}, cpuNodeInfo("c"), false},
		{"ephemeral storage the node lacks", request{storage: 1}, cpuNodeInfo("c"), false},
		{"no room for another pod", request{cpu: 1}, full, false},
		{"a zero scalar request", request{scalars: map[v1.ResourceName]int64{"example.com/foo": 0}}, cpuNodeInfo("c"), true},
		{"a scalar that is no device the node lacks", request{scalars: map[v1.ResourceName]int64{"example.com/foo": 1}}, cpuNodeInfo("c"), false},
	}
	set := newPlugin(t, defaultArgs(t)).resources
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newFitCheck(tc.req, nil, set)
			row := snapshot.NewTable(set).Refresh(nil, []fwk.NodeInfo{tc.node}).Rows[0]
			if got := c.fits(&row); got != tc.want {
				t.Errorf("fits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	pod := st.MakePod().Name("p").Namespace("ns").Label("app", "train").Obj()
	term := func(namespaces []string, nsSelector labels.Selector, app string) *fwk.AffinityTerm {
		return &fwk.AffinityTerm{Namespaces: sets.New(namespaces...), NamespaceSelector: nsSelector,
			Selector: labels.SelectorFromSet(labels.Set{"app": app})}
	}
	tests := []struct {
		name string
		term *fwk.AffinityTerm
		want bool
	}{
		{"its namespace and labels", term([]string{"ns"}, labels.Nothing(), "train"), true},
		{"another app", term([]string{"ns"}, labels.Nothing(), "serve"), false},
		{"another namespace", term([]string{"other"}, labels.Nothing(), "train"), false},
		{"a namespace selector is taken to select every namespace", term(nil, labels.SelectorFromSet(labels.Set{"team": "x"}), "train"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := selects(pod, tc.term); got != tc.want {
				t.Errorf("selects = %v, want %v", got, tc.want)
			}
		})
	}
}

// listingHandle is a handle whose framework lists its plugins.
type listingHandle struct {
	fwk.Handle
	plugins schedconfig.Plugins
}

func (h *listingHandle) ListPlugins() *schedconfig.Plugins { return &h.plugins }

func pluginSet(names ...string) schedconfig.PluginSet {
	var s schedconfig.PluginSet
	for _, n := range names {
		s.Enabled = append(s.Enabled, schedconfig.Plugin{Name: n})
	}
	return s
}

func TestReadProfile(t *testing.T) {
	// The deployed profile's order: multiPoint puts upstream's plugins
	// first, then DeviceFit and DevicePack.
	deployed := func() schedconfig.Plugins {
		p := schedconfig.Plugins{
			PreFilter: pluginSet("NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures", "DeviceFit", Name),
			Filter:    pluginSet("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeDeclaredFeatures", "DynamicResources", "DeviceFit"),
		}
		p.Score.Enabled = []schedconfig.Plugin{{Name: "TaintToleration", Weight: 3}, {Name: "ImageLocality", Weight: 1}, {Name: Name, Weight: 10}}
		// Named under postFilter too, DevicePack's comes first.
		p.PostFilter = pluginSet(Name, "DefaultPreemption", "DeviceFit")
		return p
	}
	tests := []struct {
		name          string
		change        func(*schedconfig.Plugins)
		ok            bool
		weight, image int64
		// dra: the shortlist judges DRA-served requests (ok only).
		dra bool
	}{
		{"the deployed profile", func(*schedconfig.Plugins) {}, true, 10, 1, true},
		{"DeviceFit's PreFilter before DynamicResources'", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("DeviceFit", "NodeResourcesFit", "DynamicResources", Name)
		}, true, 10, 1, true},
		{"DeviceFit filters without a PreFilter", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("NodeResourcesFit", "DynamicResources", Name)
		}, false, 0, 0, false},
		{"no DynamicResources", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("DeviceFit", "NodeResourcesFit", Name)
			p.Filter = pluginSet("NodeResourcesFit", "DeviceFit")
		}, true, 10, 1, false},
		{"a Filter plugin it does not know", func(p *schedconfig.Plugins) {
			p.Filter.Enabled = append(p.Filter.Enabled, schedconfig.Plugin{Name: "Custom"})
		}, false, 0, 0, false},
		{"NodeResourcesFit scoring (LeastAllocated tells nodes apart)", func(p *schedconfig.Plugins) {
			p.Score.Enabled = append(p.Score.Enabled, schedconfig.Plugin{Name: "NodeResourcesFit", Weight: 1})
		}, false, 0, 0, false},
		{"DeviceFit's PreFilter after DevicePack's", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("NodeResourcesFit", Name, "DeviceFit")
		}, false, 0, 0, false},
		{"NodeDeclaredFeatures' PreFilter after DevicePack's", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("DeviceFit", "NodeResourcesFit", Name, "NodeDeclaredFeatures")
		}, false, 0, 0, false},
		{"no NodeResourcesFit PreFilter", func(p *schedconfig.Plugins) {
			p.PreFilter = pluginSet("DeviceFit", Name)
		}, false, 0, 0, false},
		{"multiPoint's PostFilter order: DefaultPreemption before DevicePack", func(p *schedconfig.Plugins) {
			p.PostFilter = pluginSet("DefaultPreemption", "DeviceFit", Name)
		}, false, 0, 0, false},
		{"no DevicePack PostFilter", func(p *schedconfig.Plugins) {
			p.PostFilter = pluginSet("DefaultPreemption", "DeviceFit")
		}, false, 0, 0, false},
		{"DeviceFit's PostFilter first (it only explains)", func(p *schedconfig.Plugins) {
			p.PostFilter = pluginSet("DeviceFit", Name, "DefaultPreemption")
		}, true, 10, 1, true},
		{"no preemption at all", func(p *schedconfig.Plugins) {
			p.PostFilter = pluginSet(Name)
		}, true, 10, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugins := deployed()
			tc.change(&plugins)
			pl := &DevicePack{handle: &listingHandle{plugins: plugins}}
			got := pl.readProfile()
			if got.ok != tc.ok || got.weight != tc.weight || got.imageWeight != tc.image || got.ok && (got.draWhy == "") != tc.dra {
				t.Errorf("readProfile = %+v, want ok %v, weight %d, ImageLocality %d, DRA %v", got, tc.ok, tc.weight, tc.image, tc.dra)
			}
			if !got.ok && got.why == "" {
				t.Error("no reason given")
			}
		})
	}
}
