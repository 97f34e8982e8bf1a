package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpufleet/gpufleet/internal/crdcheck"
	"github.com/gpufleet/gpufleet/internal/fleet"
	"github.com/gpufleet/gpufleet/internal/testworld/sharedtest"
)

// TestNVIDIADriverCarriesWhatEachSchemaRequires renders an NVIDIADriver for
// every GPU Operator version in the shared charts and checks it against
// that version's CRD with every default taken out of the schema: the way
// kubeconform sees it. A field the schema requires must be written, even
// when the API server would default it (v26.7.0's spec.default).
func TestNVIDIADriverCarriesWhatEachSchemaRequires(t *testing.T) {
	ops := sharedtest.Operators(t)
	versions, err := os.ReadDir(filepath.Join(ops, "gpu-operator"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(mustReadFile(t, exampleFleet))
	for _, v := range versions {
		t.Run(v.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(ops, "gpu-operator", v.Name(), "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml"))
			if err != nil {
				t.Skipf("no NVIDIADriver CRD: %v", err)
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal(data, &crd); err != nil {
				t.Fatal(err)
			}
			for i := range crd.Spec.Versions {
				if s := crd.Spec.Versions[i].Schema; s != nil {
					dropDefaults(s.OpenAPIV3Schema)
				}
			}
			set, err := crdcheck.NewSet(&crd)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fleet.Parse("fleet.toml", []byte(strings.Replace(src, `gpu-operator = "v25.3.4"`, `gpu-operator = "`+v.Name()+`"`, 1)))
			if err != nil {
				t.Fatal(err)
			}
			out, err := Render(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := crdcheck.DecodeObjects(out.Files["clusters/prod-a100/config/nvidiadriver-a100-mig-570-172-08.yaml"])
			if err != nil || len(objs) != 1 {
				t.Fatalf("decode: %v (%d objects)", err, len(objs))
			}
			for _, p := range set.Validate(t.Context(), objs[0]) {
				t.Errorf("%s: %s", p.Object(), p.Message())
			}
		})
	}
}

// dropDefaults removes every default from a schema, recursively.
func dropDefaults(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Default = nil
	for k, p := range s.Properties {
		dropDefaults(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		dropDefaults(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			dropDefaults(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		dropDefaults(s.AdditionalProperties.Schema)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			dropDefaults(&list[i])
		}
	}
}
