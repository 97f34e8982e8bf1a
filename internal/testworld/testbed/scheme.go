package testbed

import (
	imageautov1 "github.com/fluxcd/image-automation-controller/api/v1"
	imagev1 "github.com/fluxcd/image-reflector-controller/api/v1"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	notifv1 "github.com/fluxcd/notification-controller/api/v1"
	notifv1beta3 "github.com/fluxcd/notification-controller/api/v1beta3"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// NewScheme returns a scheme with Kubernetes' built-in types, CRDs, the
// Flux types the testbed creates and gpufleet's DriverRollout: the one
// scheme of every client of a testbed cluster (the lab, the end-to-end
// suite, the gate's, promote's and explain's testbed tests). Callers may
// add their own types to it.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	utilruntime.Must(imagev1.AddToScheme(s))
	utilruntime.Must(imageautov1.AddToScheme(s))
	utilruntime.Must(notifv1.AddToScheme(s))
	utilruntime.Must(notifv1beta3.AddToScheme(s))
	return s
}
