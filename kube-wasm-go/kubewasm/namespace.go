package kubewasm

import (
	"os"
	"strings"
)

// serviceAccountNamespace is where a pod's namespace is mounted.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Namespace is the namespace the program runs for, as in-cluster controllers read it. In a
// module: the namespace the host gives it (KUBE_WASM_DEFAULT_NAMESPACE: the manifest entry's
// or WasmController's namespace, else the host's own). Natively: POD_NAMESPACE if set (the
// downward API's usual name), else the pod's service-account namespace file. Either way
// "default" when there is none, as client-go's clientcmd reads a context without one.
func Namespace() string {
	if ns := moduleNamespace(); ns != "" {
		return ns
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}
