package e2eutil

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/devicefit/devicefit/internal/controlplane"
)

// ServiceAccountToken returns a token of the service account ns/name from
// the TokenRequest API, valid for an hour. (Tokens are signed by the
// apiserver's --service-account-signing-key-file; no controller is involved.
// The service account has to exist for the token to authenticate.)
func ServiceAccountToken(ctx context.Context, cs kubernetes.Interface, ns, name string) (string, error) {
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the
// service account ns/name to dir/<ns>-<name>.kubeconfig and returns its path.
func ServiceAccountKubeconfig(ctx context.Context, cp *controlplane.ControlPlane, dir, ns, name string) (string, error) {
	token, err := ServiceAccountToken(ctx, cp.Client, ns, name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, ns+"-"+name+".kubeconfig")
	return path, cp.WriteKubeconfig(path, "system:serviceaccount:"+ns+":"+name, token)
}
