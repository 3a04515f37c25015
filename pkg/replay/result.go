package replay

// PolicyResult is the replay of one policy.
type PolicyResult struct {
	Name string `json:"name"`
	// WallSeconds is the time the replay took (setup included); set only
	// with timing on, so that the JSON is otherwise reproducible.
	WallSeconds *float64 `json:"wall_seconds,omitempty"`
	// Points has a point at every whole arrived percent from 0 to the
	// final arrived percent (rounded down): the state after the last pod
	// whose arrival kept arrived demand at or below that percent.
	Points []Point `json:"points"`
	// Final is the state after the last pod.
	Final Point `json:"final"`
	// Source says where the profile came from, ConfigSHA256 which text.
	Source       string `json:"source"`
	ConfigSHA256 string `json:"config_sha256"`
	// SchedulerName and PercentageOfNodesToScore are the profile's (the
	// latter as used: 100 with --all-nodes, 0 meaning upstream's adaptive rule).
	SchedulerName            string `json:"scheduler_name"`
	PercentageOfNodesToScore int32  `json:"percentage_of_nodes_to_score"`
	// Selector is how pods' accepted models were expressed: "annotation"
	// (devicefit.io/products, profiles with DeviceFit) or "affinity".
	Selector string `json:"selector"`
	// FailedBy counts failed pods per plugin that rejected them somewhere
	// (a pod can count for several plugins).
	FailedBy map[string]int `json:"failed_by"`
	// MovedShares counts the share claims an oracle device choice
	// (EngineOptions.DeviceChoice) gave another GPU than first fit would
	// have; SharesPlaced the share claims placed.
	MovedShares  int `json:"moved_shares,omitempty"`
	SharesPlaced int `json:"shares_placed,omitempty"`
	// Offline is the policy's final state on the pods arrived by 100%,
	// all at once, largest first (Config.Offline; nil when not asked).
	Offline *Point `json:"offline,omitempty"`
	// Defrag is what the in-loop defragmenter did (nil: it was off).
	Defrag *DefragResult `json:"defrag,omitempty"`
	// Failures lists every failed pod (not in the JSON; see WriteFailures).
	Failures []Failure `json:"-"`
	// Placements holds, per arrival, the node it was bound to ("" when it
	// failed). Not in the JSON.
	Placements []string `json:"-"`
}

// Failure is a pod that fitted nowhere.
type Failure struct {
	// Index is the pod's position in the arrival sequence.
	Index int
	// ArrivedPct is the arrived demand including this pod.
	ArrivedPct float64
	Pod        *PodSpec
	Name       string
	RejectedBy []string
}

// Point is the cluster state at one step of the replay. Percentages are of
// the fleet's devices, rounded to two decimals.
type Point struct {
	// ArrivedPct is the whole percent of a grid point (Points), or the
	// exact arrived demand (Final).
	ArrivedPct float64 `json:"arrived_pct"`
	// ArrivedExactPct is the arrived demand of the state a grid point
	// shows: at most ArrivedPct, short of it by less than the next pod.
	ArrivedExactPct float64 `json:"arrived_exact_pct"`
	AllocatedPct    float64 `json:"allocated_pct"`
	UnallocatedPct  float64 `json:"unallocated_pct"`
	// FragmentedPct is the expected stranded devices (pkg/devices,
	// Workload.Stranded, summed over nodes) for the trace's workload.
	FragmentedPct float64 `json:"fragmented_pct"`
	// FailedPods counts every pod that failed so far; FailedDevicePods
	// only those requesting devices.
	FailedPods       int `json:"failed_pods"`
	FailedDevicePods int `json:"failed_device_pods"`
	// Pods is the number of pods tried so far.
	Pods int `json:"pods"`
	// Moves counts the pods the defragmenter moved so far.
	Moves int `json:"moves,omitempty"`
}

// DefragResult is what the in-loop defragmenter did (DefragOptions).
type DefragResult struct {
	Budget   float64 `json:"budget"`
	MaxMoves int     `json:"max_moves"`
	// Delay is the arrivals a moved pod's replacement waited (omitted: 0).
	Delay int `json:"delay,omitempty"`
	// Moves counts the pods moved; Rescued the pending pods placed after
	// moves; Lost the moved pods the profile placed nowhere again.
	Moves   int `json:"moves"`
	Rescued int `json:"rescued"`
	Lost    int `json:"lost"`
}
