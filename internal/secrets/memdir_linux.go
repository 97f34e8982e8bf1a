package secrets

import (
	"fmt"
	"os"
	"syscall"
)

// Magic numbers of statfs(2) for file systems that live in memory.
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// MemoryDir returns a folder on a memory-backed file system for the one
// plaintext copy [SOPS.Edit] makes: $XDG_RUNTIME_DIR (the user's own tmpfs
// under systemd), else /dev/shm. It fails when neither is memory-backed.
func MemoryDir() (string, error) {
	var tried []string
	for _, dir := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
		if dir == "" {
			continue
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		// Type is int32, int64 or uint32 by architecture; the magic is 32 bits.
		if t := uint32(st.Type); t == tmpfsMagic || t == ramfsMagic {
			return dir, nil
		}
		tried = append(tried, dir+": not a tmpfs")
	}
	return "", fmt.Errorf("%w (tried %v): mount a tmpfs on /dev/shm or set XDG_RUNTIME_DIR to one", ErrNoMemoryDir, tried)
}
