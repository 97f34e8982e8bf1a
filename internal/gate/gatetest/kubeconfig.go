package gatetest

import (
	"net"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigWithServer writes a copy of the kubeconfig at path whose
// context points at server instead, and returns the copy's path: a
// cluster the gate (or explain) reads through a proxy or a dead address.
func KubeconfigWithServer(t *testing.T, path, context, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters[cfg.Contexts[context].Cluster].Server = server
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ClosedPort returns a loopback address nothing listens on.
func ClosedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
