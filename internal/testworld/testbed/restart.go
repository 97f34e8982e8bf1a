package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RestartAPIServer kills the cluster's kube-apiserver with SIGKILL, as a
// crash or an OOM kill would, and starts it again on the same port, with
// the same certificates and the same etcd: every watch breaks, requests
// fail until it is back, and what was stored is kept. The cluster's Config
// and kubeconfig files stay valid. It returns once the new process answers
// /healthz. (A graceful stop would do too, but kube-apiserver drains its
// connections for tens of seconds first; where the process cannot be found
// in /proc, that is what happens.)
//
// envtest removes the server's certificate folder when it stops it, and
// would make a new serving CA on start, which clients holding the old one
// would refuse; so the folder is copied aside first and put back in its
// place before the start, where envtest keeps what it finds. The folder is
// then the testbed's, not envtest's, and is left behind when the test ends
// (a few kilobytes in the temporary directory).
func (c *Cluster) RestartAPIServer() error {
	if c.env == nil {
		return fmt.Errorf("cluster %s: not running", c.Name)
	}
	api := c.env.ControlPlane.APIServer
	certDir := api.CertDir
	files, err := os.ReadDir(certDir)
	if err != nil {
		return fmt.Errorf("cluster %s: restart kube-apiserver: %w", c.Name, err)
	}
	saved := map[string][]byte{}
	for _, f := range files {
		if f.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(certDir, f.Name()))
			if err != nil {
				return fmt.Errorf("cluster %s: restart kube-apiserver: %w", c.Name, err)
			}
			saved[f.Name()] = b
		}
	}
	if pid := apiServerPID(api.SecureServing.Port); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		// envtest reaps it; wait until it has, so that Stop finds it gone
		// and the port is free.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(b), ") Z ") {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := api.Stop(); err != nil {
		return fmt.Errorf("cluster %s: stop kube-apiserver: %w", c.Name, err)
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return fmt.Errorf("cluster %s: restart kube-apiserver: %w", c.Name, err)
	}
	var errs []error
	for name, b := range saved {
		errs = append(errs, os.WriteFile(filepath.Join(certDir, name), b, 0o600))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster %s: restart kube-apiserver: %w", c.Name, err)
	}
	api.CertDir = certDir
	if err := api.Start(); err != nil {
		return fmt.Errorf("cluster %s: start kube-apiserver again: %w; log tail:\n%s", c.Name, err, c.apiServerLogTail(20))
	}
	return nil
}

// apiServerPID finds the kube-apiserver serving on port in /proc, or 0.
func apiServerPID(port string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil || port == "" {
		return 0
	}
	want := "--secure-port=" + port
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == binKubeAPIServer && slices.Contains(args, want) {
			return pid
		}
	}
	return 0
}

// apiServerLogTail is the end of kube-apiserver's log, for errors.
func (c *Cluster) apiServerLogTail(n int) string {
	if f, ok := c.env.ControlPlane.APIServer.Out.(*os.File); ok {
		return tailFile(f.Name(), n)
	}
	return ""
}
