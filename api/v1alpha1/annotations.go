package v1alpha1

// AnnotationStartup declares how long what a Flux Kustomization deploys
// takes to become healthy, when no startup probe says it (a Go duration,
// "15m"). Render writes it from a service's declared start-up; lint and
// explain read it to judge the Kustomization's spec.timeout against it.
// People write it too, on Kustomizations gpufleet did not render.
const AnnotationStartup = "gpufleet.io/startup"
