//go:build wasip1

package kubewasm

import (
	"runtime"
	"unsafe"

	"kube-wasm.dev/go/abi"
)

// The ABI's imports (SPEC.md, "Imports"). Each copies its argument during the call and
// returns at once.

//go:wasmimport kube_wasm_v1 http_request
func importHTTPRequest(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport kube_wasm_v1 watch
func importWatch(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport kube_wasm_v1 stop_signal
func importStopSignal() uint64

//go:wasmimport kube_wasm_v1 cancel
func importCancel(op uint64) int32

// wasmHost is the host shim, through the imports above.
type wasmHost struct{}

func (wasmHost) HTTPRequest(frame []byte) abi.OpID {
	id := importHTTPRequest(unsafe.Pointer(unsafe.SliceData(frame)), uint32(len(frame)))
	runtime.KeepAlive(frame)
	return id
}

func (wasmHost) Watch(frame []byte) abi.OpID {
	id := importWatch(unsafe.Pointer(unsafe.SliceData(frame)), uint32(len(frame)))
	runtime.KeepAlive(frame)
	return id
}

func (wasmHost) StopSignal() abi.OpID { return importStopSignal() }

func (wasmHost) Cancel(op abi.OpID) bool { return importCancel(op) == 1 }
