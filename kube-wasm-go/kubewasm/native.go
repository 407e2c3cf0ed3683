//go:build !wasip1

package kubewasm

import (
	"context"
	"os"
	"os/signal"

	"k8s.io/client-go/rest"
)

// InClusterConfig is, natively, rest.InClusterConfig: the pod's service account, or an
// error outside a cluster. In a module it is the host's configuration: [Default]'s
// [Reactor.Config], which never fails.
func InClusterConfig() (*rest.Config, error) { return rest.InClusterConfig() }

// NotifyContext is, natively, signal.NotifyContext. In a module its context is cancelled
// when the host asks the module to stop (SPEC.md, Lifecycle 6), which is how a host stops
// a module as SIGTERM stops a process; signals has no other effect there. Call stop to
// release it, as with signal.NotifyContext.
//
// A module must not call signal.Notify or signal.NotifyContext itself: on wasip1 the Go
// runtime waits for signals in a loop that never lets the scheduler idle, so the module
// would run until its entry's deadline ends it.
func NotifyContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(parent, signals...)
}

// IsModule reports whether the program runs as a kube-wasm module (built for wasip1).
func IsModule() bool { return false }

func moduleNamespace() string { return "" }
