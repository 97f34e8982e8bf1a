package render

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	kusttypes "sigs.k8s.io/kustomize/api/types"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// object is one Kubernetes object to write, typed or not, with the file
// name it goes in.
type object struct {
	file string
	obj  any
}

// addFolder writes each object to its own file under dir, and a
// kustomization.yaml listing them so that `kustomize build dir` works.
func addFolder(files map[string][]byte, dir string, objs []object) error {
	return addFolderWithExtra(files, dir, objs, nil)
}

// addFolderWithExtra is addFolder with extra resources that render does not
// write but the folder holds (encrypted Secrets).
func addFolderWithExtra(files map[string][]byte, dir string, objs []object, extra []string) error {
	resources := slices.Clone(extra)
	for _, o := range objs {
		var b []byte
		var err error
		if raw, ok := o.obj.(rawManifests); ok {
			b = raw
		} else if b, err = encodeObject(o.obj); err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
		if err := put(files, path.Join(dir, o.file), append([]byte(Header), b...)); err != nil {
			return err
		}
		resources = append(resources, o.file)
	}
	slices.Sort(resources)
	k := kusttypes.Kustomization{
		TypeMeta:  kusttypes.TypeMeta{APIVersion: kusttypes.KustomizationVersion, Kind: kusttypes.KustomizationKind},
		Resources: resources,
	}
	// The same bytes as sigs.k8s.io/yaml writes, without its JSON-to-YAML
	// reparse (one kustomization.yaml per folder, five per cluster).
	b, err := encodeObject(k)
	if err != nil {
		return err
	}
	return put(files, path.Join(dir, "kustomization.yaml"), append([]byte(Header), b...))
}

// put adds one file to the output; a second file at the same path is an
// error, never a silent overwrite (two names the fleet file gives that
// render to one folder).
func put(files map[string][]byte, p string, b []byte) error {
	if _, dup := files[p]; dup {
		return fmt.Errorf("two objects render to %s", p)
	}
	files[p] = b
	return nil
}

// rawManifests is YAML written as it is (a chart rendered to manifests).
type rawManifests []byte

// encodeObject marshals obj to YAML with sorted keys, without the empty
// status and creationTimestamp that typed objects carry: render writes
// desired state only. The object goes through JSON first, as
// sigs.k8s.io/yaml does (its json tags name the fields), and the map read
// back is written by goyaml.v2 (sorted keys, whole numbers as integers),
// which is what sigs.k8s.io/yaml.Marshal writes, without its second
// JSON round trip.
func encodeObject(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return goyaml.Marshal(m)
}

// dnsName turns a version such as 580.95.05 into a name segment: 580-95-05.
func dnsName(s string) string {
	return strings.ToLower(strings.NewReplacer(".", "-", "_", "-", "+", "-").Replace(s))
}
