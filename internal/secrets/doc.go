// Package secrets encrypts Kubernetes Secrets for the fleet repository with
// SOPS and age, the way kustomize-controller decrypts them: only data and
// stringData are encrypted, so a reviewer still sees which keys changed,
// and no plaintext ever touches the repository or the disk.
//
// It uses SOPS's Go library directly (tree, AES-GCM cipher, age master
// keys) rather than its command-line helpers.
package secrets
