//go:build linux

package controller

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpufleet/gpufleet/internal/testworld/testbed"
)

// The chaos and leader-election tests run gpufleet-controller as its own
// process, built from cmd/gpufleet-controller, under exactly the RBAC of
// config/rbac (the service account is impersonated) and the admission
// policy of config/admission, and kill it with SIGKILL.

// buildController builds cmd/gpufleet-controller once per test binary
// (testbed.BuildController) and returns the program's path.
func buildController(t *testing.T) string {
	t.Helper()
	path, err := testbed.BuildController("../..")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountKubeconfig writes a kubeconfig that reaches cfg's API
// server as the controller's service account (impersonated by the
// testbed's admin), so the controller has exactly config/rbac's rights.
func serviceAccountKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "controller.kubeconfig")
	if err := testbed.ServiceAccountKubeconfig(cfg, path, "gpufleet-system", Name); err != nil {
		t.Fatal(err)
	}
	return path
}

// replica is one gpufleet-controller process, restarted as often as the
// test says.
type replica struct {
	name, bin, kubeconfig, dir string
	mu                         sync.Mutex
	cmd                        *exec.Cmd
	done                       chan struct{}
	log                        *os.File
	starts                     int
}

func newReplica(t *testing.T, name, bin, kubeconfig string) *replica {
	r := &replica{name: name, bin: bin, kubeconfig: kubeconfig, dir: t.TempDir()}
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", r.name, r.tail(40))
		}
	})
	return r
}

// start runs a new process; its output goes to one log per start.
func (r *replica) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	f, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("%s-%02d.log", r.name, r.starts)))
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin,
		"--kubeconfig", r.kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--leader-elect", "--leader-election-namespace", "gpufleet-system",
		// Short leases: a replica killed with the lease held blocks the
		// next one for one lease duration.
		"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms", "--leader-elect-retry-period", "250ms",
		"--drain-retry", "300ms", "--health-poll", "1s",
		"--zap-log-level", "info",
	)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	r.cmd, r.done, r.log = cmd, done, f
	return nil
}

// running reports whether the current process is alive.
func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the current process and waits for it; it reports whether
// there was one to kill.
func (r *replica) kill() bool {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil || done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return true
}

// logs returns the current process's log so far.
func (r *replica) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return ""
	}
	b, _ := os.ReadFile(r.log.Name())
	return string(b)
}

// leading reports whether the current process won the lease: its
// controller started its workers, which controller-runtime does only on
// the leader.
func (r *replica) leading() bool {
	return r.running() && strings.Contains(r.logs(), "Starting workers")
}

func (r *replica) tail(n int) string {
	lines := strings.Split(strings.TrimRight(r.logs(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitLeading waits until one of the replicas leads and returns it.
func waitLeading(ctx context.Context, timeout time.Duration, rs ...*replica) (*replica, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, r := range rs {
			if r.leading() {
				return r, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	var b bytes.Buffer
	for _, r := range rs {
		fmt.Fprintf(&b, "--- %s (running %t) ---\n%s\n", r.name, r.running(), r.tail(15))
	}
	return nil, fmt.Errorf("no replica leads after %s:\n%s", timeout, b.String())
}
