// Package versions reads and orders the versions gpufleet compares: chart
// and operator versions (v25.10.1), NVIDIA driver versions (580.95.05, a
// branch such as 570, and 580.95.5 as a DRA driver's semver attribute
// writes it), Kubernetes versions (1.31), gpufleet's own build
// versions, and the semver ranges of image automation (">=0.8.0 <0.9.0",
// as Flux's image policies read them). One library stands behind it
// (github.com/Masterminds/semver, Flux's own), so that every package orders
// versions alike; no other package imports a semver library.
package versions
