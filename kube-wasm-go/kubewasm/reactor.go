package kubewasm

import (
	"context"
	"io"
	"sync"

	"kube-wasm.dev/go/abi"
)

// A Reactor tracks the ops its goroutines started and hands each completion the host
// delivers to the goroutine waiting for it, in order. None is lost or overwritten: an op
// keeps every completion that arrived before its owner asked (the host bounds how many
// bytes wait, its bufferedBytes quota).
//
// A module has one, [Default]; a test makes its own over a fake host. Its methods may be
// called from any goroutine.
type Reactor struct {
	host Host
	mu   sync.Mutex
	ops  map[abi.OpID]*op
}

// NewReactor returns a reactor whose ops are submitted to host.
func NewReactor(host Host) *Reactor {
	return &Reactor{host: host, ops: make(map[abi.OpID]*op)}
}

// Delivery is one completion as the guest received it.
type Delivery struct {
	// Completion is the decoded header.
	Completion abi.Completion
	// Body is the frame's body: a response body, one watch event, one line, or nothing.
	Body []byte
}

type op struct {
	r  *Reactor
	id abi.OpID
	mu sync.Mutex
	// queue holds the completions not yet taken, in arrival order.
	queue []Delivery
	// finished: a final completion was queued; the host sends nothing more.
	finished bool
	// ready has a token when the queue changed since the owner last looked.
	ready chan struct{}
}

// start submits an op with issue (one of the host's imports, which returns the op's id) and
// registers it before any completion for it can be delivered: Deliver waits on the same lock.
// In a module the host delivers only between entries; a fake host may answer from another
// goroutine as soon as it has seen the op.
func (r *Reactor) start(issue func() abi.OpID) *op {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := issue()
	o := &op{r: r, id: id, ready: make(chan struct{}, 1)}
	r.ops[id] = o
	return o
}

// Deliver hands one completion frame for op to its owner. It reports false, and drops the
// frame, when the op is unknown — finished or cancelled — as SPEC.md says a guest does.
func (r *Reactor) Deliver(id abi.OpID, frame []byte) bool {
	r.mu.Lock()
	o := r.ops[id]
	r.mu.Unlock()
	if o == nil {
		return false
	}
	c, body := abi.DecodeCompletion(frame)
	o.mu.Lock()
	if o.finished {
		o.mu.Unlock()
		return false
	}
	o.finished = c.Final()
	o.queue = append(o.queue, Delivery{Completion: c, Body: body})
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
	return true
}

// Live is the number of ops the reactor tracks (not yet finished and taken, nor closed).
func (r *Reactor) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// next returns the op's next completion, waiting for it, or io.EOF once the final one was
// taken, or ctx's error if ctx ends first (the op stays live: close cancels it).
func (o *op) next(ctx context.Context) (Delivery, error) {
	for {
		o.mu.Lock()
		if len(o.queue) > 0 {
			d := o.queue[0]
			o.queue[0] = Delivery{}
			o.queue = o.queue[1:]
			done := o.finished && len(o.queue) == 0
			o.mu.Unlock()
			if done {
				o.forget()
			}
			return d, nil
		}
		finished := o.finished
		o.mu.Unlock()
		if finished {
			o.forget()
			return Delivery{}, io.EOF
		}
		select {
		case <-o.ready:
		case <-ctx.Done():
			return Delivery{}, ctx.Err()
		}
	}
}

// forget stops tracking the op; it reports whether the op was still tracked.
func (o *op) forget() bool {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	if o.r.ops[o.id] != o {
		return false
	}
	delete(o.r.ops, o.id)
	return true
}

// close stops tracking the op and, if the host may still be working on it (no final
// completion arrived), cancels it there: its request is aborted, its watch closed.
func (o *op) close() {
	if !o.forget() {
		return
	}
	o.mu.Lock()
	finished := o.finished
	o.queue = nil
	o.mu.Unlock()
	if !finished {
		o.r.host.Cancel(o.id)
	}
}
