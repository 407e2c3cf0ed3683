package kubewasm

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

func TestStopCauseIsWhatSignalNotifyContextGives(t *testing.T) {
	for _, tc := range []struct {
		signals []os.Signal
		want    string
	}{
		{[]os.Signal{os.Interrupt, syscall.SIGTERM}, "terminated signal received"},
		{nil, "terminated signal received"},
		{[]os.Signal{os.Interrupt}, "interrupt signal received"},
	} {
		if got := stopCause(tc.signals).Error(); got != tc.want {
			t.Errorf("stopCause(%v) = %q, want %q", tc.signals, got, tc.want)
		}
	}

	// Natively: the cause signal.NotifyContext gives for SIGTERM, sent to this process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-ctx.Done()
	want := stopCause([]os.Signal{os.Interrupt, syscall.SIGTERM}).Error()
	if got := context.Cause(ctx).Error(); got != want {
		t.Errorf("signal.NotifyContext's cause %q, the module's %q", got, want)
	}
}
