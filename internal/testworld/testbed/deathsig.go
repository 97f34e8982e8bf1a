package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// setprivPath is setpriv's path when it supports --pdeathsig, else "".
var setprivPath = sync.OnceValue(func() string {
	p, err := exec.LookPath("setpriv")
	if err != nil {
		return ""
	}
	if exec.Command(p, "--pdeathsig", "KILL", "--", "true").Run() != nil {
		return ""
	}
	return p
})

// dieWithParent returns a program to run instead of the program at path:
// a script in dir that runs it under "setpriv --pdeathsig KILL", so the
// kernel kills it when the test binary dies without running its cleanups
// (a panic, "go test -timeout"). envtest starts etcd and kube-apiserver
// itself and offers no hook for that. Where setpriv is missing, path is
// returned unchanged and a crashed test may leave those two behind.
func dieWithParent(path, dir string) (string, error) {
	sp := setprivPath()
	if sp == "" {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("wrapper for %s: %w", path, err)
	}
	wrapper := filepath.Join(dir, filepath.Base(path))
	// exec keeps the pid, so envtest's signals reach the program itself.
	script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(sp), shellQuote(path))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("wrapper for %s: %w", path, err)
	}
	return wrapper, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
