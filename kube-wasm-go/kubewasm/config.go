package kubewasm

import (
	"os"

	"k8s.io/client-go/rest"

	"kube-wasm.dev/go/abi"
)

// Config returns a client-go configuration whose requests are r's ops: its Transport is
// [NewTransport](r). Host is the cluster URL the host passed (KUBE_WASM_CLUSTER_URL), for
// information only — nothing dials it — or https://kubernetes.default.svc without one. It
// carries no credential: the host authenticates every request as the module's identity.
//
// Everything else is client-go's default, as for rest.InClusterConfig: QPS 5, Burst 10 (the
// client-side rate limiter), no timeout, JSON or protobuf as the clientset asks.
func (r *Reactor) Config() *rest.Config {
	host := os.Getenv(abi.EnvClusterURL)
	if host == "" {
		host = "https://kubernetes.default.svc"
	}
	return &rest.Config{Host: host, Transport: NewTransport(r)}
}
