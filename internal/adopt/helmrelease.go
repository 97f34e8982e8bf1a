package adopt

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An operator's Helm release, as Helm records it.
//
// Helm keeps each revision of a release in the release's namespace, as a
// Secret (its default storage, type helm.sh/release.v1) or, with its older
// driver (HELM_DRIVER=configmap), a ConfigMap, named
// sh.helm.release.v1.<release>.v<revision> and labelled owner=helm,
// name=<release>, status=deployed|superseded|failed|…, version=<revision>.
// Its data key "release" is the release as JSON, gzipped, in base64 (the
// Secret's bytes are that base64 text: Kubernetes adds its own base64 on
// the wire). The JSON's "config" is the values the release was installed
// or upgraded with: what `helm get values` prints, which init carries into
// the fleet file so that render keeps them.
//
// It is decoded here with the standard library, not with Helm's storage
// package: that one brings SQL drivers and more into the CLI for what is a
// label selector and three decodings.

// The labels and data key of Helm's release records.
const (
	helmLabelOwner   = "owner"
	helmOwner        = "helm"
	helmLabelName    = "name"
	helmLabelStatus  = "status"
	helmLabelVersion = "version"
	helmDeployed     = "deployed"
	helmReleaseKey   = "release"
)

// maxReleaseJSON bounds a decompressed release: Kubernetes keeps an object
// under 1.5 MiB, and a gzipped release's JSON is not a hundred times that.
const maxReleaseJSON = 128 << 20

// HelmRelease is an operator's Helm release as Helm records it: where the
// record of its deployed revision is, and the values it was installed or
// upgraded with.
type HelmRelease struct {
	// Namespace and Name are the release's.
	Namespace, Name string
	// Record names the object the deployed revision was read from, e.g.
	// "Secret gpu-operator/sh.helm.release.v1.gpu-operator.v3"; empty when
	// none was read.
	Record string
	// Revision is the deployed revision.
	Revision int
	// Values are the release's own values (its config: what `helm get
	// values` prints), numbers as json.Number; nil when it has none.
	Values map[string]any
	// Err says why no record was read; empty when one was.
	Err string
	// Forbidden: init may not list the Secrets of the release's namespace
	// (and found no ConfigMap record it could read).
	Forbidden bool
}

// helmRecord is what init reads of a release's JSON.
type helmRecord struct {
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Version   int            `json:"version"`
	Config    map[string]any `json:"config"`
	Info      struct {
		Status string `json:"status"`
	} `json:"info"`
}

// decodeHelmRelease decodes the "release" data of a Helm release record:
// base64 text of the release's JSON, gzipped (records written before Helm
// compressed them are plain JSON, as Helm itself still reads them).
func decodeHelmRelease(data []byte) (*helmRecord, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	b = b[:n]
	var r io.Reader = bytes.NewReader(b)
	if len(b) > 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08 {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("not gzip: %w", err)
		}
		defer gz.Close()
		r = gz
	}
	var rec helmRecord
	limited := &io.LimitedReader{R: r, N: maxReleaseJSON + 1}
	dec := json.NewDecoder(limited)
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		if limited.N <= 0 {
			return nil, fmt.Errorf("the release is larger than %d MiB", maxReleaseJSON>>20)
		}
		return nil, fmt.Errorf("not a Helm release: %w", err)
	}
	return &rec, nil
}

// readHelmRelease reads the record of release's deployed revision in
// namespace: from Secrets, else from ConfigMaps. A namespace whose
// Secrets init may not list is not an error (the caller decides, see
// HelmRelease.Forbidden); any other failure to list is.
func readHelmRelease(ctx context.Context, c client.Client, namespace, release string) (HelmRelease, error) {
	out := HelmRelease{Namespace: namespace, Name: release}
	sel := client.MatchingLabels{helmLabelOwner: helmOwner, helmLabelName: release, helmLabelStatus: helmDeployed}
	type record struct {
		kind, name string
		revision   int
		data       []byte
	}
	var found []record
	revision := func(labels map[string]string) int {
		v, _ := strconv.Atoi(labels[helmLabelVersion])
		return v
	}
	var secrets corev1.SecretList
	secretsErr := c.List(ctx, &secrets, client.InNamespace(namespace), sel)
	switch {
	case apierrors.IsForbidden(secretsErr):
		out.Forbidden = true
	case secretsErr != nil:
		return out, fmt.Errorf("list the Secrets of Helm release %s/%s: %w", namespace, release, secretsErr)
	}
	for _, s := range secrets.Items {
		found = append(found, record{"Secret", s.Name, revision(s.Labels), s.Data[helmReleaseKey]})
	}
	if len(found) == 0 {
		var cms corev1.ConfigMapList
		err := c.List(ctx, &cms, client.InNamespace(namespace), sel)
		switch {
		case apierrors.IsForbidden(err) && out.Forbidden:
		case apierrors.IsForbidden(err):
			// Secrets were readable and hold none: a record in
			// ConfigMaps init may not read is unlikely; say so anyway.
			out.Err = fmt.Sprintf("no Secret records it, and init may not list the ConfigMaps of namespace %s: %v", namespace, err)
			return out, nil
		case err != nil:
			return out, fmt.Errorf("list the ConfigMaps of Helm release %s/%s: %w", namespace, release, err)
		}
		for _, cm := range cms.Items {
			found = append(found, record{"ConfigMap", cm.Name, revision(cm.Labels), []byte(cm.Data[helmReleaseKey])})
		}
	}
	if len(found) == 0 {
		if out.Forbidden {
			out.Err = fmt.Sprintf("init may not list the Secrets of namespace %s: %v", namespace, secretsErr)
		} else {
			out.Err = fmt.Sprintf("no Secret or ConfigMap in namespace %s records a deployed revision of it (labelled %s=%s, %s=%s, %s=%s)",
				namespace, helmLabelOwner, helmOwner, helmLabelName, release, helmLabelStatus, helmDeployed)
		}
		return out, nil
	}
	out.Forbidden = false
	// Helm keeps one deployed revision; should there be more, it takes the
	// latest, and so does this.
	latest := slices.MaxFunc(found, func(a, b record) int { return a.revision - b.revision })
	out.Record = latest.kind + " " + namespace + "/" + latest.name
	rec, err := decodeHelmRelease(latest.data)
	if err != nil {
		out.Err = fmt.Sprintf("%s: %v", out.Record, err)
		out.Record = ""
		return out, nil
	}
	if rec.Name != release {
		out.Err = fmt.Sprintf("%s records release %q, not %q", out.Record, rec.Name, release)
		out.Record = ""
		return out, nil
	}
	out.Revision, out.Values = rec.Version, rec.Config
	return out, nil
}

// errNoRelease: an operator Deployment that names no Helm release (judged
// a problem of its own, see installOf).
var errNoRelease = errors.New("no Helm release")

// releaseOf is the Helm release name and namespace of an operator's
// Deployment, as installOf reads them.
func releaseOf(d Deployment) (namespace, release string, err error) {
	release = d.Labels[LabelInstance]
	if release == "" {
		release = d.Annotations[AnnotationReleaseName]
	}
	namespace = d.Namespace
	if ns := d.Annotations[AnnotationReleaseNamespace]; ns != "" {
		namespace = ns
	}
	if release == "" {
		return "", "", errNoRelease
	}
	return namespace, release, nil
}
