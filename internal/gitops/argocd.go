package gitops

// NameArgoCD is Argo CD's name in the fleet file: engine = "argocd".
const NameArgoCD = "argocd"

// argoCD is Argo CD: one Application applies the cluster's three steps,
// ordered by sync waves, and a root Application (applied once by hand,
// `gpufleet bootstrap`) applies it. An Application names its repository
// itself, so the fleet file must ([gitops] repository).
type argoCD struct{}

func (argoCD) Name() string   { return NameArgoCD }
func (argoCD) Title() string  { return "Argo CD" }
func (argoCD) String() string { return NameArgoCD }
func (argoCD) index() int     { return 1 }
