package e2eutil

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Kubectl runs a kubectl binary with a kubeconfig.
type Kubectl struct {
	Binary, Kubeconfig string
}

// Run runs kubectl with args and stdin (nil: none). It returns stdout and
// stderr (warnings such as PodSecurity's "would violate" go there); an error
// carries stderr too.
func (k Kubectl) Run(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, k.Binary, append([]string{"--kubeconfig=" + k.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}
