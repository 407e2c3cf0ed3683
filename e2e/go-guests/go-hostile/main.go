// Command go-hostile is a Go guest that misbehaves as HOSTILE_MODE says, for the end-to-end
// tests of what the host does to Go modules that never stall:
//
//   - spin: a goroutine that never yields (no preemption on wasm: the scheduler never runs
//     again, so the entry never ends);
//   - deadlock: every goroutine blocked and nothing pending (natively Go's "all goroutines
//     are asleep - deadlock!");
//   - syscall: a goroutine blocked in a syscall (poll_oneoff sleeping for an hour);
//   - signal: signal.NotifyContext, unported (on wasip1 the runtime waits for signals in a
//     loop that never lets the scheduler idle).
//
// Each mode first prints "go-hostile: MODE" and waits a moment (a timer), so that the
// misbehaviour starts in a later entry than the start.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	_ "kube-wasm.dev/go/kubewasm" // the module's entries
)

func main() {
	mode := os.Getenv("HOSTILE_MODE")
	fmt.Printf("go-hostile: %s\n", mode)
	time.Sleep(100 * time.Millisecond)
	switch mode {
	case "spin":
		done := make(chan struct{})
		go func() {
			n := 0
			for {
				n++
			}
		}()
		<-done
	case "deadlock":
		block := make(chan struct{})
		<-block
	case "syscall":
		sleepInPoll(time.Hour)
	case "signal":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
	default:
		fmt.Fprintf(os.Stderr, "go-hostile: unknown HOSTILE_MODE %q\n", mode)
		os.Exit(2)
	}
}

// subscription is WASI preview 1's subscription to a relative monotonic clock.
type subscription struct {
	userdata  uint64
	tag       uint8
	_         [7]byte
	id        uint32
	_         uint32
	timeout   uint64
	precision uint64
	flags     uint16
	_         [6]byte
}

type event struct {
	userdata uint64
	errno    uint16
	typ      uint8
	_        [21]byte
}

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in unsafe.Pointer, out unsafe.Pointer, n uint32, nevents unsafe.Pointer) uint32

// sleepInPoll blocks the whole module in one poll_oneoff call, as a blocking syscall does.
func sleepInPoll(d time.Duration) {
	sub := subscription{id: 1, timeout: uint64(d.Nanoseconds()), precision: 1000}
	var ev event
	var n uint32
	errno := pollOneoff(unsafe.Pointer(&sub), unsafe.Pointer(&ev), 1, unsafe.Pointer(&n))
	fmt.Printf("go-hostile: poll_oneoff returned %d\n", errno)
}
