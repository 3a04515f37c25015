package skew

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// row is what one minor showed, for the table in docs/support.md.
type row struct {
	server    string
	kustomize string
	ready     string
	pods      []string
	// defragmenter is devicefit-defragmenter's run (defragmenter_test.go).
	defragmenter string
	helm         string
}

var report = struct {
	sync.Mutex
	rows map[string]*row
}{rows: map[string]*row{}}

// reportRow is minor m's row, made on first use.
func reportRow(m minor) *row {
	report.Lock()
	defer report.Unlock()
	r, ok := report.rows[m.String()]
	if !ok {
		r = &row{}
		report.rows[m.String()] = r
	}
	return r
}

// writeReport writes the rows as a markdown table to path ("": nowhere).
func writeReport(path string) error {
	if path == "" || len(report.rows) == 0 {
		return nil
	}
	var minors []string
	for m := range report.rows {
		minors = append(minors, m)
	}
	sort.Strings(minors)
	var b strings.Builder
	b.WriteString("| control plane | kustomize install | scheduler ready (lease held) | pods | defragmenter | helm install |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, m := range minors {
		r := report.rows[m]
		fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s |\n", m, r.server, r.kustomize, r.ready,
			strings.ReplaceAll(strings.Join(r.pods, "<br>"), "|", `\|`), r.defragmenter, r.helm)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
