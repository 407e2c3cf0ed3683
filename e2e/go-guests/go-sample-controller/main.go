// Command go-sample-controller is a client-go controller shaped like Kubernetes'
// sample-controller, ported by the Go port guide's three calls and nothing else, and built
// with the oldest client-go and Go the SDK supports (this module's go.mod): a leader election
// on a Lease, an event recorder, server-side apply, an update retried on conflict, a
// rate-limited workqueue with AddAfter requeues, klog's flags and a dynamic client.
//
// It copies each ConfigMap labelled kube-wasm.dev/copy=true into "<name>-copy" (server-side
// apply, owned by the source, annotated with a hash of the data), marks the source with that
// hash (kube-wasm.dev/copied-hash), records a Normal "Copied" Event on it, and deletes the copy
// when the source is gone. It reconciles only while it holds the Lease "go-sample-controller"
// in its namespace, and gives the Lease up when stopped.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"kube-wasm.dev/go/kubewasm"
)

const (
	name       = "go-sample-controller"
	copyLabel  = "kube-wasm.dev/copy"
	hashKey    = "kube-wasm.dev/hash"
	copiedKey  = "kube-wasm.dev/copied-hash"
	requeueGap = 20 * time.Second
)

type controller struct {
	client   kubernetes.Interface
	lister   listers.ConfigMapLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
}

// hash is a digest of data, the same for the same keys and values in any order.
func hash(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (c *controller) enqueue(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err != nil {
		utilruntime.HandleError(err)
	} else {
		c.queue.Add(key)
	}
}

func (c *controller) sync(ctx context.Context, key string) error {
	ns, source, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	copies := c.client.CoreV1().ConfigMaps(ns)
	cm, err := c.lister.ConfigMaps(ns).Get(source)
	if apierrors.IsNotFound(err) {
		err := copies.Delete(ctx, source+"-copy", metav1.DeleteOptions{})
		if err == nil {
			klog.InfoS("deleted the copy", "key", key)
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	sum := hash(cm.Data)
	owner := metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("ConfigMap").
		WithName(cm.Name).WithUID(cm.UID).WithController(true)
	apply := corev1ac.ConfigMap(source+"-copy", ns).
		WithAnnotations(map[string]string{hashKey: sum}).
		WithData(cm.Data).
		WithOwnerReferences(owner)
	if _, err := copies.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: name, Force: true}); err != nil {
		return err
	}
	if cm.Annotations[copiedKey] != sum {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fresh, err := copies.Get(ctx, source, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fresh.Annotations == nil {
				fresh.Annotations = map[string]string{}
			}
			fresh.Annotations[copiedKey] = sum
			_, err = copies.Update(ctx, fresh, metav1.UpdateOptions{FieldManager: name})
			return err
		})
		if err != nil {
			return err
		}
		c.recorder.Eventf(cm, corev1.EventTypeNormal, "Copied", "copied to %s-copy (hash %s)", source, sum)
		klog.InfoS("copied", "key", key, "hash", sum)
	}
	c.queue.AddAfter(key, requeueGap)
	return nil
}

func (c *controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.ErrorS(err, "sync failed, requeued", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *controller) run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		klog.Error("the informer's cache did not sync")
		return
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx) {
			}
		}, time.Second)
	}
	klog.Info("watching ConfigMaps")
	<-ctx.Done()
}

// clientConfig is the port guide's Step 1: the host's configuration in a module, else a
// kubeconfig (the --kubeconfig flag, KUBECONFIG, ~/.kube/config) and its namespace.
func clientConfig(kubeconfig string) (*rest.Config, string, error) {
	if config, err := kubewasm.InClusterConfig(); err == nil {
		return config, kubewasm.Namespace(), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	config, err := loader.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := loader.Namespace()
	return config, namespace, err
}

func main() {
	klog.InitFlags(nil)
	// On stdout, where the end-to-end tests read a program's lines.
	klog.LogToStderr(false)
	klog.SetOutput(os.Stdout)
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig (natively)")
	workers := flag.Int("workers", 2, "workers of the workqueue")
	flag.Parse()

	ctx, stop := kubewasm.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	config, namespace, err := clientConfig(*kubeconfig)
	if err != nil {
		klog.ErrorS(err, "no client configuration")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	client := kubernetes.NewForConfigOrDie(config)

	// A paginated list through the dynamic client.
	resource := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	page, err := dynamic.NewForConfigOrDie(config).Resource(resource).Namespace(namespace).
		List(ctx, metav1.ListOptions{LabelSelector: copyLabel + "=true", Limit: 1})
	if err != nil {
		klog.ErrorS(err, "listing ConfigMaps")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.InfoS("first page", "items", len(page.Items), "more", page.GetContinue() != "")

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = copyLabel + "=true" }))
	configMaps := factory.Core().V1().ConfigMaps()

	broadcaster := record.NewBroadcaster()
	broadcaster.StartStructuredLogging(0)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(namespace)})
	defer broadcaster.Shutdown()

	c := &controller{
		client:   client,
		lister:   configMaps.Lister(),
		synced:   configMaps.Informer().HasSynced,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: name}),
	}
	_, err = configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		klog.ErrorS(err, "adding the event handler")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}

	// sample-controller's identity: the host name and a UUID (os.Hostname is "wasip1" in
	// every module).
	hostname, err := os.Hostname()
	if err != nil {
		klog.ErrorS(err, "no host name")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	identity := hostname + "_" + string(uuid.NewUUID())
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		ReleaseOnCancel: true,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				factory.Start(ctx.Done())
				c.run(ctx, *workers)
			},
			OnStoppedLeading: func() { klog.InfoS("leading no more", "identity", identity) },
		},
	})
	factory.Shutdown()
	klog.Info("stopped")
}
