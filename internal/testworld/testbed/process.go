package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// process is a program the testbed started and must stop.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error // set before done is closed
}

// startProcess runs path with args and env, its output going to logPath.
// Unless env names one, the process gets a temporary folder of its own
// beside its log (TMPDIR): Flux's controllers build in it, and a shared
// one would see other programs' clean-ups, or another test's, running at
// once.
func startProcess(name, path string, args, env []string, logPath string) (*process, error) {
	if env == nil {
		env = os.Environ()
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }) {
		tmp := filepath.Join(filepath.Dir(logPath), "tmp-"+filepath.Base(logPath))
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		env = append(slices.Clip(env), "TMPDIR="+tmp)
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pid := p.cmd.Process.Pid
	// A negative pid signals the whole group, so children of the program
	// (none today, but cheap insurance) go too.
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("stop %s: pid %d did not exit after SIGKILL", p.name, pid)
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

// tailFile returns the last n lines of the file at path, or a note why not.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before it is used; the testbed accepts that small race, as envtest does.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls url until it answers 200, the process exits, or ctx ends.
func waitReady(ctx context.Context, p *process, url string) error {
	return pollOK(ctx, p, url, &http.Client{Timeout: time.Second})
}

// pollOK polls url with client until it answers 200, the process exits, or
// ctx ends.
func pollOK(ctx context.Context, p *process, url string, client *http.Client) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); log tail:\n%s", p.name, p.err, p.tail(30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w; log tail:\n%s", p.name, url, ctx.Err(), p.tail(30))
		case <-tick.C:
		}
	}
}

// environ returns the current environment with the given variables set,
// replacing any inherited values (a developer's KUBECONFIG must not leak in).
func environ(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}
