package kubewasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"kube-wasm.dev/go/abi"
	"kube-wasm.dev/go/kubewasm"
	"kube-wasm.dev/go/kubewasm/fakehost"
)

func clientset(t *testing.T, host *fakehost.Host) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(host.Reactor.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func status(t *testing.T, code int32, reason metav1.StatusReason, message string) []byte {
	t.Helper()
	b, err := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func configMapJSON(t *testing.T, name, rv string) []byte {
	t.Helper()
	b, err := json.Marshal(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv},
		Data:       map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// result runs f on its own goroutine, as the code under test runs, and returns its outcome.
func result[T any](f func() (T, error)) <-chan struct {
	v   T
	err error
} {
	ch := make(chan struct {
		v   T
		err error
	}, 1)
	go func() {
		v, err := f()
		ch <- struct {
			v   T
			err error
		}{v, err}
	}()
	return ch
}

func TestAGetIsOneRequestAnsweredWhole(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	got := result(func() (*corev1.ConfigMap, error) {
		return cs.CoreV1().ConfigMaps("ns").Get(context.Background(), "a", metav1.GetOptions{})
	})
	op := host.Next(t)
	if op.Import != abi.ImportHTTPRequest || op.HTTP.Method != "GET" ||
		op.HTTP.URI != "/api/v1/namespaces/ns/configmaps/a" || op.HTTP.Response != abi.ResponseWhole {
		t.Fatalf("submitted %+v", op)
	}
	host.Respond(op.ID, 200, configMapJSON(t, "a", "7"))
	r := <-got
	if r.err != nil || r.v.Name != "a" || r.v.Data["k"] != "v" || r.v.ResourceVersion != "7" {
		t.Fatalf("got %+v, %v", r.v, r.err)
	}
	if host.Reactor.Live() != 0 {
		t.Errorf("the finished op is still tracked")
	}
}

// A 403 (the API server's, or the host's permission check), a 404, a 429 (a quota of the
// host, or the API server's max-in-flight) and a 410 reach client-go as the StatusError it
// builds natively from the same answer.
func TestStatusAnswersAreStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		code   int32
		reason metav1.StatusReason
		is     func(error) bool
	}{
		{403, metav1.StatusReasonForbidden, apierrors.IsForbidden},
		{404, metav1.StatusReasonNotFound, apierrors.IsNotFound},
		{429, metav1.StatusReasonTooManyRequests, apierrors.IsTooManyRequests},
		{410, metav1.StatusReasonExpired, apierrors.IsResourceExpired},
	} {
		host := fakehost.New()
		cs := clientset(t, host)
		got := result(func() (*corev1.ConfigMapList, error) {
			return cs.CoreV1().ConfigMaps("ns").List(context.Background(), metav1.ListOptions{})
		})
		op := host.Next(t)
		body := status(t, tc.code, tc.reason, "told by the test")
		if tc.code == 429 {
			host.Complete(op.ID, abi.Completion{Kind: abi.KindResponse, Status: 429,
				Headers: [][2]string{{"content-type", "application/json"}, {"retry-after", "1"}}}, body)
			// client-go retries a 429 with Retry-After (as natively): answer the retry too.
			op = host.Next(t)
		}
		host.Respond(op.ID, int(tc.code), body)
		r := <-got
		var se *apierrors.StatusError
		if !errors.As(r.err, &se) || !tc.is(r.err) || se.ErrStatus.Code != tc.code || se.ErrStatus.Message != "told by the test" {
			t.Errorf("%d: got %#v", tc.code, r.err)
		}
	}
}

func TestHostErrorsAreTransportErrors(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	got := result(func() (*corev1.ConfigMap, error) {
		return cs.CoreV1().ConfigMaps("ns").Get(context.Background(), "a", metav1.GetOptions{})
	})
	op := host.Next(t)
	host.Complete(op.ID, abi.Completion{Kind: abi.KindError, Code: abi.CodeInvalidRequest, Message: "bad header"}, nil)
	r := <-got
	var opErr *kubewasm.OpError
	var urlErr *url.Error
	if !errors.As(r.err, &urlErr) || !errors.As(r.err, &opErr) || opErr.Code != abi.CodeInvalidRequest {
		t.Fatalf("got %#v", r.err)
	}
}

func TestACancelledRequestCancelsItsOp(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	ctx, cancel := context.WithCancel(context.Background())
	got := result(func() (*corev1.ConfigMap, error) {
		return cs.CoreV1().ConfigMaps("ns").Get(ctx, "a", metav1.GetOptions{})
	})
	op := host.Next(t)
	cancel()
	r := <-got
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v", r.err)
	}
	if c := host.Cancelled(); len(c) != 1 || c[0] != op.ID {
		t.Fatalf("cancelled %v, want [%d]", c, op.ID)
	}
	if host.Respond(op.ID, 200, configMapJSON(t, "a", "1")) {
		t.Errorf("a completion of a cancelled op was taken")
	}
}

func TestWatchesAreWatchOpsStreamingEvents(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	timeout := int64(60)
	got := result(func() (watch.Interface, error) {
		return cs.CoreV1().ConfigMaps("ns").Watch(context.Background(), metav1.ListOptions{
			LabelSelector: "app=x", ResourceVersion: "5", TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
	})
	op := host.Next(t)
	w := op.Watch
	if op.Import != abi.ImportWatch || w.Path != "/api/v1/namespaces/ns/configmaps" || w.ResourceVersion != "5" ||
		w.LabelSelector == nil || *w.LabelSelector != "app=x" || w.TimeoutSeconds == nil || *w.TimeoutSeconds != 60 ||
		!w.Bookmarks || w.MetadataOnly || w.FieldSelector != nil {
		t.Fatalf("submitted %+v", op)
	}
	host.Complete(op.ID, abi.Completion{Kind: abi.KindHead, Status: 200}, nil)
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Two events before the first is read: both arrive, in order.
	for i, rv := range []string{"6", "7"} {
		event := []byte(`{"type":"MODIFIED","object":` + string(configMapJSON(t, "a", rv)) + `}`)
		if i == 0 {
			event = []byte(`{"type":"ADDED","object":` + string(configMapJSON(t, "a", rv)) + `}`)
		}
		host.Complete(op.ID, abi.Completion{Kind: abi.KindWatchEvent}, event)
	}
	for _, want := range []struct {
		typ watch.EventType
		rv  string
	}{{watch.Added, "6"}, {watch.Modified, "7"}} {
		select {
		case e := <-r.v.ResultChan():
			cm, ok := e.Object.(*corev1.ConfigMap)
			if e.Type != want.typ || !ok || cm.ResourceVersion != want.rv {
				t.Fatalf("event %v %#v", e.Type, e.Object)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
	// A 410 in the stream is the ERROR event client-go's reflector relists on.
	host.Complete(op.ID, abi.Completion{Kind: abi.KindWatchEvent},
		[]byte(`{"type":"ERROR","object":`+string(status(t, 410, metav1.StatusReasonExpired, "too old resource version"))+`}`))
	e := <-r.v.ResultChan()
	if st, ok := e.Object.(*metav1.Status); e.Type != watch.Error || !ok || st.Code != 410 {
		t.Fatalf("event %v %#v", e.Type, e.Object)
	}
	r.v.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for host.Live(op.ID) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if host.Live(op.ID) {
		t.Fatalf("stopping the watch did not cancel its op")
	}
}

func TestAWatchTheServerRefusesIsAnError(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	got := result(func() (watch.Interface, error) {
		return cs.CoreV1().Secrets("ns").Watch(context.Background(), metav1.ListOptions{})
	})
	op := host.Next(t)
	host.Respond(op.ID, 403, status(t, 403, metav1.StatusReasonForbidden, "secrets is forbidden"))
	if r := <-got; !apierrors.IsForbidden(r.err) {
		t.Fatalf("got %v", r.err)
	}
}

func TestAWatchEndsWhenTheHostEndsIt(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	got := result(func() (watch.Interface, error) {
		return cs.CoreV1().ConfigMaps("ns").Watch(context.Background(), metav1.ListOptions{})
	})
	op := host.Next(t)
	host.Complete(op.ID, abi.Completion{Kind: abi.KindHead, Status: 200}, nil)
	r := <-got
	host.Complete(op.ID, abi.Completion{Kind: abi.KindEnd}, nil)
	select {
	case _, open := <-r.v.ResultChan():
		if open {
			t.Fatalf("an event after the end")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end")
	}
	if len(host.Cancelled()) != 0 {
		t.Errorf("a finished watch was cancelled: %v", host.Cancelled())
	}
}

func TestWatchesTheOpCannotExpressStreamLines(t *testing.T) {
	host := fakehost.New()
	cs := clientset(t, host)
	go func() {
		_, _ = cs.CoreV1().ConfigMaps("ns").Watch(context.Background(), metav1.ListOptions{
			ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	}()
	op := host.Next(t)
	if op.Import != abi.ImportHTTPRequest || op.HTTP.Response != abi.ResponseLines {
		t.Fatalf("submitted %+v", op)
	}
}
