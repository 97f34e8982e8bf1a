// Package secrets encrypts Kubernetes Secrets for the fleet repository with
// SOPS and age, the way kustomize-controller decrypts them: only data and
// stringData are encrypted, so a reviewer still sees which keys changed,
// and no plaintext ever touches the repository or the disk.
//
// It runs the sops program rather than linking SOPS's Go library, as the
// Flux CLI does: the library's root package reaches every key service SOPS
// supports (AWS, Azure, GCP, Vault, HuaweiCloud, PGP) and would make up
// more than a third of the gpufleet binary, and the files stay exactly what
// the sops that users and Flux run reads and writes. Plaintext and keys go
// to sops through its standard input and its environment, never through
// files; see [SOPS.Edit] for the one copy an editor needs.
//
// The package sopstest finds the sops that "make testbin" builds, for tests.
package secrets
