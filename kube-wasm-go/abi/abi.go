// Package abi is the kube-wasm ABI (kube-wasm-abi/SPEC.md) in Go: the names of the imports
// and exports, the version, the idle descriptor, frames, and the headers of operations and
// completions. It holds no state and imports nothing but the standard library, so it builds
// and is tested the same way natively and for wasip1; the kubewasm package uses it on both
// sides of its fake host.
//
// SPEC.md is the source of truth. The Rust crate kube-wasm-abi is its other definition;
// TestNamesAreTheSpecs (abi_test.go) reads SPEC.md's tables and checks this package
// against them, as kube-wasm-abi/tests/spec.rs checks the Rust crate.
package abi

// Major is the ABI's major version, part of the import module name [ImportModule].
const Major = 1

// Minor is the ABI's minor version this SDK speaks: 1.4, the first with reactor modules
// and idle polls, which Go guests need.
const Minor = 4

// Version is the packed version the export kube_wasm_abi_version returns:
// Major<<16 | Minor.
const Version = Major<<16 | Minor

// ImportModule is the wasm import module of every ABI import.
const ImportModule = "kube_wasm_v1"

// The ABI's imports (module [ImportModule]), in SPEC.md's order.
const (
	ImportHTTPRequest  = "http_request"
	ImportWatch        = "watch"
	ImportDelay        = "delay"
	ImportStopSignal   = "stop_signal"
	ImportCancel       = "cancel"
	ImportStreamOpen   = "stream_open"
	ImportStreamSend   = "stream_send"
	ImportStreamCredit = "stream_credit"
)

// The ABI's exports, in SPEC.md's order. A Go guest is a reactor module: it exports
// ExportInitialize (the Go toolchain's), ExportReactorStart and ExportWake, never ExportStart.
const (
	ExportABIVersion   = "kube_wasm_abi_version"
	ExportAlloc        = "kube_wasm_alloc"
	ExportComplete     = "kube_wasm_complete"
	ExportStart        = "_start"
	ExportInitialize   = "_initialize"
	ExportReactorStart = "kube_wasm_start"
	ExportWake         = "kube_wasm_wake"
)

// IdleFD is the idle descriptor (SPEC.md, "Reactor modules and idle polls"): the WASI file
// descriptor a reactor module subscribes to when its scheduler has nothing left to run. The
// host answers such a poll at once with the descriptor readable, which lets the export
// waiting for it return, and keeps the poll's earliest clock as the guest's next timer.
const IdleFD = 0x4000_0000

// The environment variables the host sets for every module (SPEC.md, "Environment").
const (
	EnvModule           = "KUBE_WASM_MODULE"
	EnvDefaultNamespace = "KUBE_WASM_DEFAULT_NAMESPACE"
	EnvClusterURL       = "KUBE_WASM_CLUSTER_URL"
)
