package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Output formats. Every command that prints something a script would read
// takes -o/--output, as kubectl, flux and helm do: "table" (or "text" where
// the output is prose) for people, "json" and "yaml" for programs.
const (
	formatTable = "table"
	formatText  = "text"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// machineFormat says the format is for programs: errors come out in it too.
func machineFormat(format string) bool { return format == formatJSON || format == formatYAML }

// checkFormat refuses an -o the command cannot write, as a usage error.
func checkFormat(format string, allowed ...string) error {
	if !slices.Contains(allowed, format) {
		return withCode(ExitUsage, fmt.Errorf("-o must be %s, got %q", orList(allowed), format))
	}
	return nil
}

func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// writeDocument writes v as indented JSON, or as YAML (the JSON field names,
// so both forms have one schema).
func writeDocument(w io.Writer, format string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == formatYAML {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
