package v1alpha1

// The labels and annotations gpufleet owns or reads on objects other than
// nodes.
const (
	// AnnotationStartup declares how long what a Flux Kustomization
	// deploys takes to become healthy, when no startup probe says it (a Go
	// duration, "15m"). Render writes it from a service's declared
	// start-up; lint and explain read it to judge the Kustomization's
	// spec.timeout against it. People write it too, on Kustomizations
	// gpufleet did not render.
	AnnotationStartup = "gpufleet.io/startup"
	// LabelManagedBy is the recommended Kubernetes label
	// app.kubernetes.io/managed-by. Render sets it to ManagedByGPUFleet on
	// what it writes, by which init tells gpufleet's own objects from
	// those it adopts.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByGPUFleet is LabelManagedBy's value on what render writes.
	ManagedByGPUFleet = "gpufleet"
	// LabelHelmChart is the label Helm charts put on what they install,
	// "<chart>-<chart version>" (a "+" in the version written "_"): the
	// gate reads the operators' chart versions by it in the manifests
	// mode, and init the versions of the operators it adopts.
	LabelHelmChart = "helm.sh/chart"
)
