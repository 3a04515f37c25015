package localup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// explainedPod is the demo pod the run explains: unschedulable for a reason
// that only shows per node (workload, class wrong-pool).
const explainedPod = "wrong-pool-0"

// printDay2 runs what an operator would next, with the plugin from bin/:
// `kubectl devicefit inventory` and `kubectl devicefit explain` of an
// unschedulable pod. The local run deploys no scheduler Deployment, so the
// plugin gets the run's configuration file.
func printDay2(ctx context.Context, out io.Writer, binDir, kubeconfig, config string) error {
	plugin := filepath.Join(binDir, "kubectl-devicefit")
	for _, args := range [][]string{
		{"inventory"},
		{"explain", explainedPod, "-n", namespace},
	} {
		fmt.Fprintf(out, "\n$ kubectl devicefit %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, plugin, append(args, "--kubeconfig", kubeconfig, "--config", config)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out.Write(stdout.Bytes())
		out.Write(stderr.Bytes())
		// explain exits 2 for an unschedulable pod, which this one is.
		var exit *exec.ExitError
		if err != nil && !(args[0] == "explain" && errors.As(err, &exit) && exit.ExitCode() == 2) {
			return fmt.Errorf("kubectl devicefit %s: %w (run `make build` first)", strings.Join(args, " "), err)
		}
	}
	return nil
}
