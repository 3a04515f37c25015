package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// writeCredentials creates the apiserver's serving certificate, the service
// account signing key, the client and front-proxy CAs, a static token file and
// the two kubeconfigs. All of it is new for every control plane, in a new
// directory: kube-apiserver and kube-scheduler reuse whatever pair they find
// in --cert-dir, and a pair left from an earlier run would not be the one the
// kubeconfigs trust.
func (cp *ControlPlane) writeCredentials() error {
	pki := filepath.Join(cp.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return fmt.Errorf("generating the apiserver certificate: %w", err)
	}
	cp.CAFile = filepath.Join(pki, "apiserver.crt")
	if err := cert.WriteCert(cp.CAFile, certPEM); err != nil {
		return err
	}
	if err := keyutil.WriteKey(filepath.Join(pki, "apiserver.key"), keyPEM); err != nil {
		return err
	}
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return fmt.Errorf("generating the service account key: %w", err)
	}
	if err := keyutil.WriteKey(filepath.Join(pki, "sa.key"), saKey); err != nil {
		return err
	}
	if err := writeCA(filepath.Join(pki, "client-ca.crt"), "devicefit-client-ca"); err != nil {
		return err
	}
	if err := writeCA(filepath.Join(pki, "front-proxy-ca.crt"), "devicefit-front-proxy-ca"); err != nil {
		return err
	}

	cp.AdminToken = randomToken()
	cp.SchedulerToken = randomToken()
	// token,user,uid,"groups"
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		cp.AdminToken, AdminUser, AdminUser, cp.SchedulerToken, SchedulerUser, SchedulerUser)
	if err := os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}

	port, err := FreePort()
	if err != nil {
		return err
	}
	cp.apiPort = port
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.AdminKubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	cp.SchedulerKubeconfig = filepath.Join(cp.Dir, "scheduler.kubeconfig")
	if err := cp.WriteKubeconfig(cp.AdminKubeconfig, AdminUser, cp.AdminToken); err != nil {
		return err
	}
	return cp.WriteKubeconfig(cp.SchedulerKubeconfig, SchedulerUser, cp.SchedulerToken)
}

// writeCA writes a CA certificate whose key is thrown away, for
// --client-ca-file and --requestheader-client-ca-file. The apiserver
// publishes both in kube-system/extension-apiserver-authentication, which
// every delegating component (the scheduler's secure port) watches; without
// them the scheduler logs errors about the missing bundles for as long as it
// runs. No certificate is issued from them: clients use tokens.
func writeCA(path, name string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: name}, key)
	if err != nil {
		return fmt.Errorf("generating %s: %w", name, err)
	}
	pem, err := cert.EncodeCertificates(ca)
	if err != nil {
		return err
	}
	return cert.WriteCert(path, pem)
}

func writeKubeconfig(path, server, caFile, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devicefit"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["devicefit"] = &clientcmdapi.Context{Cluster: "devicefit", AuthInfo: user}
	cfg.CurrentContext = "devicefit"
	return clientcmd.WriteToFile(*cfg, path)
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on Linux; if it ever does, there is no
		// safe token to fall back to.
		panic(err)
	}
	return hex.EncodeToString(b)
}
