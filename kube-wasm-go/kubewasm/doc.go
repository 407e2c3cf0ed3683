// Package kubewasm runs client-go controllers as kube-wasm modules: built with the standard
// Go toolchain for wasip1 (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared), they run in
// the kube-wasm host shim, which talks to the Kubernetes API server for them, shares their
// watches, enforces their permissions and quotas, and suspends them to disk while idle.
//
// A controller's source changes in three calls, and builds natively as before:
//
//	config, err := kubewasm.InClusterConfig()             // was rest.InClusterConfig()
//	ctx, stop := kubewasm.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM) // was signal.NotifyContext
//	namespace := kubewasm.Namespace() // was POD_NAMESPACE or the service account's namespace file
//
// Natively they are exactly what they replace. In a module, InClusterConfig returns a
// rest.Config whose Transport is the kube-wasm ABI (see [Reactor.Config]), [Namespace] is
// the namespace the host gives the module, and NotifyContext's context is cancelled when the
// host asks the module to stop. The SDK's go.mod asks for Go 1.24 and client-go v0.33.0, the
// oldest it works with, so requiring it raises neither in a controller's go.mod. The package's wasip1 files export the module's entries: the host calls
// kube_wasm_start, which runs the program's main, unchanged, as Go runs it natively.
//
// # How a module runs
//
// Go's runtime runs every //go:wasmexport function on a goroutine and, while it blocks, runs
// the others; when none can run it waits in WASI poll_oneoff. So each export of this package
// ends by waiting on the idle descriptor (see the abi package and SPEC.md, "Reactor modules
// and idle polls"): the host answers the runtime's wait with that descriptor readable the
// moment no goroutine can run, the export returns, and between events the module has no
// stack — its goroutines stay parked in its memory, which the host may write to disk. The
// wait's earliest clock is the runtime's next timer (a time.Sleep, a workqueue's delay), at
// which the host enters the module again (kube_wasm_wake).
//
// Each operation the transport starts is an op of the host (an HTTP request, a watch, the
// stop signal); its completions are delivered by the host through kube_wasm_complete and
// handed to the goroutine waiting for them by the [Reactor].
package kubewasm
