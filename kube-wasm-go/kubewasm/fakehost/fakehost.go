// Package fakehost is an in-process kube-wasm host for native tests of code that uses
// package kubewasm, as kube-wasm-guest's fake module is for Rust guests: the ops a test's
// code submits are recorded for the test to inspect, and the test answers them, which hands
// the completion to the waiting goroutine exactly as kube_wasm_complete does in a module.
//
//	host := fakehost.New()
//	clientset := kubernetes.NewForConfigOrDie(host.Reactor.Config())
//	go func() { _, err = clientset.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{}) }()
//	op := host.Next(t) // the request, decoded
//	host.Respond(op.ID, 404, notFoundStatus)
package fakehost

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"kube-wasm.dev/go/abi"
	"kube-wasm.dev/go/kubewasm"
)

// Op is one op as the code under test submitted it.
type Op struct {
	// ID is the op id the fake host issued.
	ID abi.OpID
	// Import names the import: abi.ImportHTTPRequest, abi.ImportWatch or
	// abi.ImportStopSignal.
	Import string
	// HTTP is the decoded header of an http_request.
	HTTP abi.HTTPRequest
	// Watch is the decoded header of a watch.
	Watch abi.WatchRequest
	// Body is the frame's body.
	Body []byte
}

// Host is the fake host. Its Reactor is the code under test's: use its Config.
type Host struct {
	Reactor *kubewasm.Reactor

	mu        sync.Mutex
	next      abi.OpID
	submitted []Op
	live      map[abi.OpID]bool
	cancelled []abi.OpID
	arrived   chan struct{}
}

// New returns a fake host with its reactor.
func New() *Host {
	h := &Host{next: 1, live: map[abi.OpID]bool{}, arrived: make(chan struct{}, 1)}
	h.Reactor = kubewasm.NewReactor((*imports)(h))
	return h
}

// imports is the kubewasm.Host the reactor calls.
type imports Host

func (i *imports) submit(op Op) abi.OpID {
	h := (*Host)(i)
	h.mu.Lock()
	op.ID = h.next
	h.next++
	h.live[op.ID] = true
	h.submitted = append(h.submitted, op)
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	return op.ID
}

func (i *imports) HTTPRequest(frame []byte) abi.OpID {
	header, body, err := abi.DecodeFrame(frame)
	op := Op{Import: abi.ImportHTTPRequest, Body: body}
	if err == nil {
		err = json.Unmarshal(header, &op.HTTP)
	}
	if err != nil {
		panic(fmt.Sprintf("fakehost: a bad http_request frame: %v", err))
	}
	return i.submit(op)
}

func (i *imports) Watch(frame []byte) abi.OpID {
	header, _, err := abi.DecodeFrame(frame)
	op := Op{Import: abi.ImportWatch}
	if err == nil {
		err = json.Unmarshal(header, &op.Watch)
	}
	if err != nil {
		panic(fmt.Sprintf("fakehost: a bad watch frame: %v", err))
	}
	return i.submit(op)
}

func (i *imports) StopSignal() abi.OpID { return i.submit(Op{Import: abi.ImportStopSignal}) }

func (i *imports) Cancel(op abi.OpID) bool {
	h := (*Host)(i)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.live[op] {
		return false
	}
	delete(h.live, op)
	h.cancelled = append(h.cancelled, op)
	return true
}

// Next waits (up to 10 s, else fails the test) for the next op submitted since the last
// call, in submission order, and returns it.
func (h *Host) Next(t testing.TB) Op {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		if len(h.submitted) > 0 {
			op := h.submitted[0]
			h.submitted = h.submitted[1:]
			h.mu.Unlock()
			return op
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-deadline:
			t.Fatalf("fakehost: no op was submitted within 10 s")
			return Op{}
		}
	}
}

// Complete delivers one completion to op, as kube_wasm_complete does; a final one retires
// the op on the host's side. It reports whether the reactor still tracked the op.
func (h *Host) Complete(op abi.OpID, c abi.Completion, body []byte) bool {
	if c.Final() {
		h.mu.Lock()
		delete(h.live, op)
		h.mu.Unlock()
	}
	return h.Reactor.Deliver(op, abi.EncodeFrame(c, body))
}

// Respond completes op with a whole response of status and body (JSON).
func (h *Host) Respond(op abi.OpID, status int, body []byte) bool {
	return h.Complete(op, abi.Completion{Kind: abi.KindResponse, Status: status,
		Headers: [][2]string{{"content-type", "application/json"}}}, body)
}

// Cancelled returns the ops the code under test cancelled, in order.
func (h *Host) Cancelled() []abi.OpID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]abi.OpID(nil), h.cancelled...)
}

// Live returns whether op is live on the host's side: issued, not finished, not cancelled.
func (h *Host) Live(op abi.OpID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live[op]
}
