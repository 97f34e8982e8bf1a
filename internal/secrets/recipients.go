package secrets

import (
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// sopsMetadata is the part of a SOPS file's sops: key that lists its age
// key stanzas.
type sopsMetadata struct {
	SOPS *struct {
		Age []struct {
			Recipient string `json:"recipient"`
		} `json:"age"`
	} `json:"sops"`
}

// Recipients lists the age recipients a SOPS file is encrypted to, in the
// order of the file. It reads the file's metadata only; no key is needed.
func Recipients(encrypted []byte) ([]string, error) {
	var m sopsMetadata
	if err := yaml.Unmarshal(encrypted, &m); err != nil {
		return nil, fmt.Errorf("read SOPS file: %w", err)
	}
	if m.SOPS == nil {
		return nil, errors.New("not a SOPS file: it has no sops key")
	}
	var out []string
	for i, a := range m.SOPS.Age {
		if a.Recipient == "" {
			return nil, fmt.Errorf("sops.age[%d]: no recipient", i)
		}
		out = append(out, a.Recipient)
	}
	if len(out) == 0 {
		return nil, errors.New("sops.age: the file is encrypted to no age recipient")
	}
	return out, nil
}
