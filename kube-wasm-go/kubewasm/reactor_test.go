package kubewasm_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"kube-wasm.dev/go/abi"
	"kube-wasm.dev/go/kubewasm"
)

// eagerHost answers each http_request from another goroutine before the import returns its
// op id, as a host on another thread could (the fake host's tests answer as soon as they see
// an op): the answer must still reach the request.
type eagerHost struct {
	reactor   *kubewasm.Reactor
	answer    []byte
	delivered chan bool
}

func (h *eagerHost) HTTPRequest([]byte) abi.OpID {
	const id abi.OpID = 1
	frame := abi.EncodeFrame(abi.Completion{Kind: abi.KindResponse, Status: 200,
		Headers: [][2]string{{"content-type", "application/json"}}}, h.answer)
	returned := make(chan bool, 1)
	go func() {
		ok := h.reactor.Deliver(id, frame)
		returned <- ok
		h.delivered <- ok
	}()
	// Let the delivery run first: it either returns (the op unknown: dropped) or waits until
	// the op is registered.
	select {
	case <-returned:
	case <-time.After(50 * time.Millisecond):
	}
	return id
}

func (*eagerHost) Watch([]byte) abi.OpID { panic("eagerHost: no watches") }
func (*eagerHost) StopSignal() abi.OpID  { panic("eagerHost: no stop signal") }
func (*eagerHost) Cancel(abi.OpID) bool  { return false }

func TestACompletionDeliveredBeforeTheImportReturnsReachesTheRequest(t *testing.T) {
	host := &eagerHost{answer: configMapJSON(t, "a", "7"), delivered: make(chan bool, 1)}
	host.reactor = kubewasm.NewReactor(host)
	cs, err := kubernetes.NewForConfig(host.reactor.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cm, err := cs.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || cm.ResourceVersion != "7" {
		t.Fatalf("got %+v, %v", cm, err)
	}
	if !<-host.delivered {
		t.Errorf("the reactor dropped the completion")
	}
}
