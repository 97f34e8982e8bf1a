package gitops

// NameFlux is Flux's name in the fleet file: engine = "flux".
const NameFlux = "flux"

// flux is Flux: kustomize-controller (and helm-controller in the
// helmrelease chart mode) applies each step of the cluster's folder, the
// steps chained by dependsOn. `flux bootstrap` puts a cluster under it
// and writes the GitRepository every step applies from.
type flux struct{}

func (flux) Name() string   { return NameFlux }
func (flux) Title() string  { return "Flux" }
func (flux) String() string { return NameFlux }
func (flux) index() int     { return 0 }
