package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of this package.
var GroupVersion = schema.GroupVersion{Group: "gpufleet.io", Version: "v1alpha1"}

// Kind names, for TypeMeta.
const (
	KindDriverRollout     = "DriverRollout"
	KindDriverRolloutList = "DriverRolloutList"
)

var (
	// SchemeBuilder registers the package's types. It is built on
	// apimachinery's own builder rather than controller-runtime's so that
	// importing the API pulls in no controller machinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DriverRollout{}, &DriverRolloutList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
