// Package lint finds what hurts Flux repositories that run GPU serving
// stacks: Secrets in plaintext, Kustomizations that give up before what
// they deploy can start, prune turned off, dependsOn to nothing or in a
// cycle, dependencies that nobody waits for, intervals too short, listed
// resources that are missing. It also reports the drift-repair time each
// Kustomization's interval implies.
//
// It reads any repository, whether gpufleet rendered it or a person wrote
// it: every finding names a file and line and suggests a fix.
package lint
