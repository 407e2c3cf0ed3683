package kubewasm

import (
	"errors"
	"os"
	"syscall"
)

// stopCause is the cause ([context.Cause]) of a [NotifyContext] context that the host's
// stop request cancelled: what signal.NotifyContext gives when the signal arrives,
// "<signal> signal received". The host stops a module as the kubelet stops a container,
// so the signal is SIGTERM when signals holds it or is empty (every signal), else the first
// of signals, the one the stop request stands for.
func stopCause(signals []os.Signal) error {
	var sig os.Signal = syscall.SIGTERM
	if len(signals) > 0 {
		sig = signals[0]
		for _, s := range signals {
			if s == syscall.SIGTERM {
				sig = s
				break
			}
		}
	}
	return errors.New(sig.String() + " signal received")
}
