//go:build wasip1

package kubewasm

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"

	"kube-wasm.dev/go/abi"
)

// Default is the module's reactor, over the host shim's imports: every op of the module is
// its op. (Natively it is nil: there is no host.)
var Default = NewReactor(wasmHost{})

// InClusterConfig returns the host's configuration: [Default]'s [Reactor.Config]. It never
// fails. Natively it is rest.InClusterConfig.
func InClusterConfig() (*rest.Config, error) { return Default.Config(), nil }

// NotifyContext returns a copy of parent that is cancelled when the host asks the module to
// stop (SPEC.md, Lifecycle 6), as signal.NotifyContext's is by the signals natively: the
// host's stop request stands for them all, and [context.Cause] gives what it gives for
// SIGTERM, "terminated signal received" (the first of signals if SIGTERM is not among
// them). stop cancels the context and withdraws the request to be told; until a module has
// called NotifyContext, the host ends it at once when it stops, as a process that does not
// handle SIGTERM dies of it.
func NotifyContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	o := Default.start(Default.host.StopSignal)
	go func() {
		d, err := o.next(ctx)
		switch {
		case err != nil:
			// Stopped by the caller or the parent: nothing to tell.
		case d.Completion.Kind == abi.KindStop:
			cancel(stopCause(signals))
		default:
			fmt.Fprintf(os.Stderr, "kube-wasm: the host refused the stop signal (%s: %s); this context ends only with its parent\n",
				d.Completion.Code, d.Completion.Message)
		}
	}()
	return ctx, func() {
		cancel(nil)
		o.close()
	}
}

// IsModule reports whether the program runs as a kube-wasm module (built for wasip1).
func IsModule() bool { return true }

func moduleNamespace() string { return os.Getenv(abi.EnvDefaultNamespace) }
