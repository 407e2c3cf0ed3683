// Command go-configmap-mirror is examples/configmap-mirror written as client-go users write
// controllers: a shared informer on the labelled ConfigMaps of its namespace feeds a rate-
// limited workqueue, and one worker mirrors each ConfigMap into a Secret of the same name
// (server-side apply), deletes the Secret when the ConfigMap goes away, and at start deletes
// mirrors whose ConfigMap is gone.
//
// The same source builds natively (go build) and as a kube-wasm module
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared). The port changed two calls:
// rest.InClusterConfig and signal.NotifyContext became kubewasm's (see
// docs/src/porting/go.md).
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"kube-wasm.dev/go/kubewasm"
)

const (
	selector     = "kube-wasm.dev/mirror=true"
	mirroredFrom = "kube-wasm.dev/mirrored-from"
	manager      = "configmap-mirror"
)

func main() {
	ctx, stop := kubewasm.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "configmap-mirror: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("configmap-mirror: stop requested (%v), exiting\n", context.Cause(ctx))
}

// clientConfig is the pod's configuration in a cluster (or the host's, in a module), else
// the kubeconfig's, with its context's namespace.
func clientConfig() (*rest.Config, string, error) {
	if config, err := kubewasm.InClusterConfig(); err == nil {
		return config, kubewasm.Namespace(), nil
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{})
	config, err := loader.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := loader.Namespace()
	return config, namespace, err
}

type controller struct {
	secrets    kubernetesSecrets
	configMaps listers.ConfigMapNamespaceLister
	queue      workqueue.TypedRateLimitingInterface[string]
}

type kubernetesSecrets = interface {
	Apply(ctx context.Context, secret *corev1ac.SecretApplyConfiguration, opts metav1.ApplyOptions) (*corev1.Secret, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error)
}

func run(ctx context.Context) error {
	config, namespace, err := clientConfig()
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	fmt.Printf("configmap-mirror: watching ConfigMaps with %s in namespace %s\n", selector, namespace)
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().ConfigMaps()
	c := &controller{
		secrets:    clientset.CoreV1().Secrets(namespace),
		configMaps: informer.Lister().ConfigMaps(namespace),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "configmap-mirror"}),
	}
	defer c.queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return nil // stopped before the first list
	}
	if err := c.prune(ctx); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
	return nil
}

// next reconciles the next key of the queue; false once the queue is shut down.
func (c *controller) next(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		fmt.Fprintf(os.Stderr, "configmap-mirror: %s: %v (retrying)\n", key, err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// reconcile makes the Secret of the ConfigMap key match it, or deletes it if the ConfigMap
// is gone.
func (c *controller) reconcile(ctx context.Context, key string) error {
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cm, err := c.configMaps.Get(name)
	if apierrors.IsNotFound(err) {
		return c.remove(ctx, name)
	}
	if err != nil {
		return err
	}
	data := make(map[string][]byte, len(cm.Data))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	secret := corev1ac.Secret(name, cm.Namespace).
		WithLabels(map[string]string{mirroredFrom: name}).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.secrets.Apply(ctx, secret, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
		return err
	}
	fmt.Printf("configmap-mirror: mirrored ConfigMap %s into Secret %s\n", name, name)
	return nil
}

// prune deletes mirrored Secrets whose ConfigMap is gone (deleted while nothing watched).
func (c *controller) prune(ctx context.Context) error {
	mirrored, err := c.secrets.List(ctx, metav1.ListOptions{LabelSelector: mirroredFrom})
	if err != nil {
		return err
	}
	live, err := c.configMaps.List(labels.Everything())
	if err != nil {
		return err
	}
	sources := make(map[string]bool, len(live))
	for _, cm := range live {
		sources[cm.Name] = true
	}
	for _, s := range mirrored.Items {
		if !sources[s.Labels[mirroredFrom]] {
			if err := c.remove(ctx, s.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *controller) remove(ctx context.Context, name string) error {
	err := c.secrets.Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	fmt.Printf("configmap-mirror: deleted Secret %s\n", name)
	return nil
}
