//go:build !linux

package secrets

import "fmt"

// MemoryDir finds no memory-backed folder outside Linux, where gpufleet
// cannot tell a RAM disk from a disk: [SOPS.Edit] refuses there rather
// than write the plaintext to a disk. Run `sops edit` on such a machine.
func MemoryDir() (string, error) {
	return "", fmt.Errorf("%w: gpufleet finds one only on Linux (a tmpfs); here use sops edit FILE", ErrNoMemoryDir)
}
