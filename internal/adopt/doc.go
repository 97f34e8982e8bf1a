// Package adopt is what `gpufleet init` does: it reads the GPU fleet that
// already runs (the GPU nodes and their labels, the GPU Operator and the
// Network Operator as Helm installed them, with the values of their Helm
// releases, the ClusterPolicy) and writes the fleet file that describes
// it, so that rendering that file and letting Flux apply it changes nothing
// that runs.
//
// Three steps, each its own file and its own tests:
//
//   - Read (read.go) turns each kubeconfig context into a Cluster: a plain
//     description of what the cluster runs, nothing judged. It is the only
//     code that talks to a cluster, and it only reads. A cluster that
//     cannot be read is an error of its own kind (ReadError): init fails
//     closed and writes nothing. Each operator's Helm release record
//     (helmrelease.go) is decoded with the standard library, not Helm's
//     storage package; a record init may not read is a fact for Judge (a
//     problem that says what to grant), not a cluster unreadable.
//   - Judge (judge.go, operators.go, values.go, pools.go, names.go,
//     waves.go) turns those descriptions into a Fleet, the model of the
//     fleet file, or into Problems. It is pure and
//     table-tested. It refuses to guess: nodes whose driver differs from
//     their pool's, a GPU node without a product label, a host-installed
//     driver, a node in the middle of an operator upgrade, clusters that
//     run different versions, a release whose values cannot be read or
//     whose driver.version the nodes do not run. Every problem names the
//     nodes (or clusters) and what to do, and all of them are reported
//     together.
//   - Write (write.go) turns a Fleet into the fleet file's text,
//     deterministic and commented like examples/fleet.toml; golden-tested.
//
// The command (internal/cli/init.go) only wires these together.
package adopt
