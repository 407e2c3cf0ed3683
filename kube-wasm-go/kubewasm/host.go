package kubewasm

import "kube-wasm.dev/go/abi"

// Host is what the SDK asks of the kube-wasm host: the ABI's imports (SPEC.md, "Imports").
// In a module it is the host shim itself; in tests, the fake host of package fakehost.
// Each method returns at once; the op's completions arrive later through
// [Reactor.Deliver].
type Host interface {
	// HTTPRequest submits an http_request frame and returns its op id.
	HTTPRequest(frame []byte) abi.OpID
	// Watch submits a watch frame and returns its op id.
	Watch(frame []byte) abi.OpID
	// StopSignal asks to be told when the host wants the module to stop.
	StopSignal() abi.OpID
	// Cancel cancels a live op; it reports whether the host still knew it.
	Cancel(op abi.OpID) bool
}
