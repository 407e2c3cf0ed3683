// Command go-controller-runtime is configmap-mirror as a controller-runtime Reconciler: a
// manager whose cache holds the labelled ConfigMaps of one namespace, and a controller that
// mirrors each into a Secret of the same name (server-side apply) and deletes the Secret
// when the ConfigMap is gone.
//
// The same source builds natively (go build) and as a kube-wasm module
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared). The port changed what a module
// cannot have: the configuration (kubewasm.InClusterConfig before ctrl.GetConfig), the
// stop signal (kubewasm.NotifyContext for ctrl.SetupSignalHandler, which calls
// signal.Notify) and the manager's servers (metrics and health probes off: a module has no
// socket). See docs/src/porting/go.md.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"kube-wasm.dev/go/kubewasm"
)

const (
	mirroredFrom = "kube-wasm.dev/mirrored-from"
	manager      = "configmap-mirror"
)

func main() {
	ctx, stop := kubewasm.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "go-controller-runtime: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("go-controller-runtime: stop requested, exiting")
}

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

// mirror reconciles one ConfigMap into its Secret.
type mirror struct {
	client.Client
}

func (m *mirror) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	err := m.Get(ctx, req.NamespacedName, &cm)
	if apierrors.IsNotFound(err) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: req.Name, Namespace: req.Namespace}}
		if err := m.Delete(ctx, secret); err == nil {
			fmt.Printf("go-controller-runtime: deleted Secret %s\n", req.Name)
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	data := make(map[string][]byte, len(cm.Data))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, Labels: map[string]string{mirroredFrom: cm.Name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := m.Patch(ctx, secret, client.Apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return ctrl.Result{}, err
	}
	fmt.Printf("go-controller-runtime: mirrored ConfigMap %s into Secret %s\n", cm.Name, cm.Name)
	return ctrl.Result{}, nil
}

func run(ctx context.Context) error {
	config, namespace, err := clientConfig()
	if err != nil {
		return err
	}
	selector := labels.SelectorFromSet(labels.Set{"kube-wasm.dev/mirror": "true"})
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: selector}},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(&mirror{mgr.GetClient()}); err != nil {
		return err
	}
	fmt.Printf("go-controller-runtime: watching ConfigMaps with kube-wasm.dev/mirror=true in namespace %s\n", namespace)
	return mgr.Start(ctx)
}
