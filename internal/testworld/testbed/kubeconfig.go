package testbed

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigFor builds a kubeconfig with one context per named REST config;
// cluster, user and context all take the cluster's name, so
// "kubectl --context NAME" reaches the cluster of that name.
func kubeconfigFor(names []string, configs map[string]*rest.Config, current string) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	for _, name := range names {
		cfg := configs[name]
		kc.Clusters[name] = &clientcmdapi.Cluster{
			Server:                   cfg.Host,
			CertificateAuthorityData: cfg.CAData,
		}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
			ClientCertificateData: cfg.CertData,
			ClientKeyData:         cfg.KeyData,
			Token:                 cfg.BearerToken,
		}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = current
	return kc
}

// writeKubeconfig writes kubeconfigFor(...) to path.
func writeKubeconfig(path string, names []string, configs map[string]*rest.Config, current string) error {
	if err := clientcmd.WriteToFile(*kubeconfigFor(names, configs, current), path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
