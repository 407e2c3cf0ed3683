//go:build wasip1

package kubewasm

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe" // also for go:linkname

	"k8s.io/klog/v2"

	"kube-wasm.dev/go/abi"
)

// The module's exports (SPEC.md, "Exports"): a Go guest is a reactor module. Each entry
// ends in idle: it returns once no goroutine can run.

// mainMain is the program's main function, which the Go runtime does not run in a reactor
// (-buildmode=c-shared): kube_wasm_start runs it.
//
//go:linkname mainMain main.main
func mainMain()

//go:wasmexport kube_wasm_abi_version
func exportABIVersion() int32 { return abi.Version }

// lent holds the buffers kube_wasm_alloc handed to the host, by address, until
// kube_wasm_complete takes them back (Go's collector does not move objects, so the address
// stays valid while the buffer is held here).
var (
	lentMu sync.Mutex
	lent   = map[uint32][]byte{}
)

//go:wasmexport kube_wasm_alloc
func exportAlloc(n int32) uint32 {
	if n < 0 {
		return 0
	}
	buf := make([]byte, max(n, 1))
	addr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	lentMu.Lock()
	lent[addr] = buf
	lentMu.Unlock()
	return addr
}

//go:wasmexport kube_wasm_complete
func exportComplete(op int64, ptr uint32, n int32) {
	lentMu.Lock()
	buf, ok := lent[ptr]
	delete(lent, ptr)
	lentMu.Unlock()
	if !ok || n < 0 || int(n) > len(buf) {
		fmt.Fprintf(os.Stderr, "kube-wasm: completion for op %d in a buffer the guest did not lend; ignored\n", op)
	} else {
		Default.Deliver(uint64(op), buf[:n])
	}
	waitIdle()
}

//go:wasmexport kube_wasm_start
func exportStart() {
	openIdle()
	// klog's init starts a daemon that flushes its buffers every 5 s: a timer that would wake
	// the module every 5 s for nothing, since in a module klog writes straight to stderr (the
	// host's log) and buffers nothing.
	klog.StopFlushDaemon()
	// client-go's informers list by a streaming watch (sendInitialEvents) since 1.35; the
	// host shares watches, and lists at resourceVersion 0, between modules, not streaming
	// lists (which it sends upstream one by one). A module lists and watches as client-go
	// did before, so that its informers share the host's watches, unless its environment
	// says otherwise (client-go reads KUBE_FEATURE_* once, at first use).
	if _, set := os.LookupEnv(watchListGate); !set {
		_ = os.Setenv(watchListGate, "false")
	}
	go func() {
		mainMain()
		// As natively: when main returns, the program exits, whatever else runs.
		os.Exit(0)
	}()
	waitIdle()
}

//go:wasmexport kube_wasm_wake
func exportWake() { waitIdle() }

// watchListGate is the environment variable of client-go's WatchListClient feature gate.
const watchListGate = "KUBE_FEATURE_WatchListClient"

// idle is the idle descriptor (SPEC.md, "Reactor modules and idle polls"), registered with
// the runtime's network poller: the host reports it readable when the poller waits while
// no goroutine can run.
var (
	idleFile *os.File
	idleConn syscall.RawConn
)

// newPollableFile is the os package's constructor of the files that net hands it for its
// sockets (os.net_newUnixFile, exported to net under this name): a file registered with the
// runtime's network poller as a non-blocking descriptor, without a syscall. The idle
// descriptor is known only to the host's poll_oneoff (os.NewFile would ask fd_fdstat_get
// whether it is non-blocking, which the host's WASI answers with badf).
//
//go:linkname newPollableFile net.newUnixFile
func newPollableFile(fd int, name string) *os.File

func openIdle() {
	idleFile = newPollableFile(abi.IdleFD, "kube-wasm-idle")
	conn, err := idleFile.SyscallConn()
	if err != nil {
		panic(fmt.Sprintf("kube-wasm: the idle descriptor cannot be polled (%v): does the host speak ABI %d.%d?", err, abi.Major, abi.Minor))
	}
	idleConn = conn
}

// waitIdle parks the calling goroutine — the export's — in the network poller on the idle
// descriptor and returns once the host reported it readable: the runtime had nothing left
// to run. Its callback says "not yet" once, so that Read waits, and "done" when woken.
func waitIdle() {
	waited := false
	err := idleConn.Read(func(uintptr) bool {
		done := waited
		waited = true
		return done
	})
	if err != nil {
		panic(fmt.Sprintf("kube-wasm: waiting on the idle descriptor: %v", err))
	}
}
