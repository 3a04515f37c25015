package e2e

import (
	"context"
	"github.com/devicefit/devicefit/internal/e2eutil"
)

// kubectl runs bin/kubectl with the admin kubeconfig and stdin (nil: none).
// It returns stdout and stderr (warnings such as PodSecurity's "would
// violate" go there); an error carries stderr too.
func kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error) {
	return adminKubectl().Run(ctx, stdin, args...)
}

func adminKubectl() e2eutil.Kubectl {
	return s.env.Kubectl("kubectl")
}
