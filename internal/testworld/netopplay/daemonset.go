package netopplay

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpufleet/gpufleet/api/v1alpha1"
)

// serviceAccount is the OFED pods' service account, as the operator's.
const serviceAccount = "ofed-driver"

// DaemonSetName is the name the Network Operator gives the OFED DaemonSet
// of the nodes of OS os (e.g. "ubuntu"), OS version osVersion ("22.04") and
// kernel: mofed-ubuntu22.04-<kernel hash>-ds. No driver version is in it:
// a new version changes the DaemonSet's template, not which DaemonSet.
func DaemonSetName(os, osVersion, kernel string) string {
	return appName(os, osVersion, kernel) + "-ds"
}

func appName(os, osVersion, kernel string) string {
	return fmt.Sprintf("mofed-%s%s-%s", os, osVersion, kernelHash(kernel))
}

// Image is the OFED container's image for a policy's repository, image and
// version on nodes of OS os, OS version osVersion and architecture arch:
// <repository>/<image>:<version>-<os><osVersion>-<arch>, as the operator
// names the image that is not precompiled.
func Image(repository, image, version, os, osVersion, arch string) string {
	return fmt.Sprintf("%s/%s:%s-%s%s-%s", repository, image, version, os, osVersion, arch)
}

// daemonSet is the OFED DaemonSet of node pool np in namespace, shaped as
// the operator's manifests/state-ofed-driver template renders it for a
// policy with spec.ofedDriver ofed, spec.nodeAffinity affinity and
// spec.tolerations tolerations.
func daemonSet(namespace string, np nodePool, ofed ofedSpec, affinity *corev1.NodeAffinity, tolerations []corev1.Toleration) *appsv1.DaemonSet {
	app := appName(np.os, np.osVersion, np.kernel)
	podAffinity := &corev1.Affinity{
		// One OFED pod per node, whichever DaemonSet it belongs to.
		PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: v1alpha1.LabelOFEDDriverPod, Operator: metav1.LabelSelectorOpExists,
				}}},
				TopologyKey: corev1.LabelHostname,
			}},
		},
	}
	if affinity != nil {
		podAffinity.NodeAffinity = affinity
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      DaemonSetName(np.os, np.osVersion, np.kernel),
			Namespace: namespace,
			Labels: map[string]string{
				"app":                       app,
				v1alpha1.LabelOFEDDriverPod: "",
				"mofed-ds-format-version":   "1",
			},
		},
		Spec: appsv1.DaemonSetSpec{
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					"app":                       app,
					"kernel":                    np.kernel,
					v1alpha1.LabelOFEDDriverPod: "",
				}},
				Spec: corev1.PodSpec{
					PriorityClassName: "system-node-critical",
					Tolerations: append(append([]corev1.Toleration(nil), tolerations...), corev1.Toleration{
						Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}),
					Affinity:           podAffinity,
					ServiceAccountName: serviceAccount,
					HostNetwork:        true,
					Containers: []corev1.Container{{
						Name:            v1alpha1.OFEDContainer,
						Image:           Image(ofed.Repository, ofed.Image, ofed.Version, np.os, np.osVersion, np.arch),
						ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{Privileged: new(true)},
						// The operator's default probes: started once the
						// driver wrote its ready file, live and Ready while
						// mlx5_core is loaded.
						StartupProbe:   execProbe("ls /run/mellanox/drivers/.driver-ready", 30, 10, 60),
						LivenessProbe:  execProbe("lsmod | grep mlx5_core", 10, 30, 1),
						ReadinessProbe: execProbe("lsmod | grep mlx5_core", 10, 30, 1),
					}},
					NodeSelector: map[string]string{
						v1alpha1.LabelNFDMellanoxPCI: "true",
						v1alpha1.LabelNFDOSID:        np.os,
						v1alpha1.LabelNFDOSVersion:   np.osVersion,
						v1alpha1.LabelNFDKernel:      np.kernel,
					},
				},
			},
		},
	}
}

// execProbe is a probe running command in a shell, with the operator's
// timeout (10 s) and success threshold (1).
func execProbe(command string, initialDelay, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", command}}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		FailureThreshold:    failures,
		SuccessThreshold:    1,
		TimeoutSeconds:      10,
	}
}
