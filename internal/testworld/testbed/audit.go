package testbed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditPolicy records every request's metadata once it is answered (and a
// watch once it starts), with nothing of its body: enough to count the
// requests of each program, cheap enough for a benchmark to run with.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// auditFlags configures the API server of a cluster in dir to write its
// audit log there; it returns the flags and the log's path.
func auditFlags(dir string) (map[string]string, string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, "", err
	}
	log := filepath.Join(dir, "kube-apiserver-audit.log")
	return map[string]string{
		"audit-policy-file": policy,
		"audit-log-path":    log,
		"audit-log-format":  "json",
		// Written as requests are answered: the log is read while the
		// cluster runs.
		"audit-log-mode":    "blocking",
		"audit-log-maxsize": "0",
	}, log, nil
}

// Requests are one program's requests to an API server.
type Requests struct {
	// Reads are gets, lists and watches started.
	Reads int
	// Writes are creates, updates, patches and deletes (an eviction is a
	// create of a pod's eviction subresource).
	Writes int
	// ByResource counts the writes by resource ("nodes", "pods/eviction").
	ByResource map[string]int
}

// Requests counts the requests the cluster's API server received in
// [from, to), by the program that sent them: the user agent up to its
// first "/" ("gpu-operator", "gpufleet-controller", "kwok",
// "kube-controller-manager"), whatever credentials it used. It needs
// [Options.AuditLog].
func (c *Cluster) Requests(from, to time.Time) (map[string]Requests, error) {
	if c.AuditLog == "" {
		return nil, fmt.Errorf("cluster %s: no audit log: start the testbed with Options.AuditLog", c.Name)
	}
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]Requests{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", c.AuditLog, err)
		}
		// A watch is counted when it starts, any other request when it is
		// answered: each once.
		if e.Stage != stageFor(e.Verb) || e.RequestReceivedTimestamp.Before(from) || !e.RequestReceivedTimestamp.Before(to) {
			continue
		}
		program, _, _ := strings.Cut(e.UserAgent, "/")
		r := out[program]
		switch e.Verb {
		case "get", "list", "watch":
			r.Reads++
		case "create", "update", "patch", "delete", "deletecollection":
			r.Writes++
			if r.ByResource == nil {
				r.ByResource = map[string]int{}
			}
			res := e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				res += "/" + e.ObjectRef.Subresource
			}
			r.ByResource[res]++
		}
		out[program] = r
	}
	return out, sc.Err()
}

func stageFor(verb string) string {
	if verb == "watch" {
		return "ResponseStarted"
	}
	return "ResponseComplete"
}

// auditEvent is what Requests reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage                    string    `json:"stage"`
	Verb                     string    `json:"verb"`
	UserAgent                string    `json:"userAgent"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	ObjectRef                struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}
