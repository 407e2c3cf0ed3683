#!/usr/bin/env bash
# The demo, end to end on a fresh machine: a real kube-apiserver and a real OCI registry on
# loopback, the example controller built for wasm32-wasip1 and pushed to the registry, the
# host shim running the cluster's WasmControllers, one WasmController mirroring a ConfigMap
# into a Secret. Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "toolchain: wasm32-wasip1 target"
rustup target add wasm32-wasip1

step "control plane and registry: build kube-apiserver, kubectl and etcd from their Go module sources (about 4 minutes the first time, then cached) and Debian's docker-registry"
scripts/control-plane.sh provision >/dev/null
scripts/registry.sh provision >/dev/null

step "build the host shim and the example controller for wasm32-wasip1"
cargo build -p host-shim
cargo build --target wasm32-wasip1 -p configmap-mirror
ls -l target/wasm32-wasip1/debug/configmap-mirror.wasm

step "start the control plane and the registry"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-demo.XXXXXX")
registry_dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-demo-registry.XXXXXX")
host_pid=""
cleanup() {
  [ -n "$host_pid" ] && kill -TERM "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null || true
  scripts/registry.sh stop "$registry_dir" || true
  scripts/control-plane.sh stop "$cp_dir" || true
}
trap cleanup EXIT
scripts/control-plane.sh start "$cp_dir" >/dev/null
scripts/registry.sh start "$registry_dir" >/dev/null
registry=$(sed -n 's/^REGISTRY=//p' "$registry_dir/env")
set -a
# shellcheck disable=SC1091
. "$cp_dir/env"
set +a
export PATH="$CONTROL_PLANE_BIN:$PATH"  # kubectl of the server's version
step "the control plane: kube-apiserver $KUBE_VERSION"
kubectl version
k() { kubectl "$@" 2>/dev/null; }

step "push the module to the registry"
target/debug/host-shim push --insecure target/wasm32-wasip1/debug/configmap-mirror.wasm "$registry/kube-wasm/configmap-mirror:v1"

step "install the WasmController CRD and run the host as their operator"
kubectl apply -f deploy/wasmcontroller-crd.yaml
kubectl wait --for=condition=Established --timeout=60s crd/wasmcontrollers.kube-wasm.dev
target/debug/host-shim run --controllers --host-name demo --insecure-registry "$registry" \
  --cache-dir "$cp_dir/module-cache" --kubeconfig "$KUBECONFIG" &
host_pid=$!

wait_for() { # wait_for DESCRIPTION COMMAND...
  local what=$1; shift
  for _ in $(seq 1 200); do "$@" && return 0; sleep 0.3; done
  echo "timed out waiting for $what" >&2; return 1
}
secret_value() { k get secret demo -o jsonpath='{.data.greeting}' | base64 -d; }

step "kubectl apply a WasmController"
kubectl apply -f - <<YAML
apiVersion: kube-wasm.dev/v1alpha1
kind: WasmController
metadata:
  name: configmap-mirror
spec:
  image: $registry/kube-wasm/configmap-mirror:v1
  memory: 64Mi
YAML
wait_for "the module to run" sh -c '[ "$(kubectl get wasmcontroller configmap-mirror -o jsonpath={.status.phase} 2>/dev/null)" = Running ]'
kubectl get wasmcontrollers

step "create a labelled ConfigMap"
k create configmap demo --from-literal=greeting=hello
k label configmap demo kube-wasm.dev/mirror=true
wait_for "the Secret" sh -c 'kubectl get secret demo >/dev/null 2>&1'
echo "Secret demo, greeting = $(secret_value)"

step "update the ConfigMap"
k patch configmap demo --type merge -p '{"data":{"greeting":"bonjour"}}'
wait_for "the update" sh -c '[ "$(kubectl get secret demo -o jsonpath={.data.greeting} 2>/dev/null | base64 -d)" = bonjour ]'
echo "Secret demo, greeting = $(secret_value)"

step "delete the ConfigMap"
k delete configmap demo
wait_for "the Secret to go" sh -c '! kubectl get secret demo >/dev/null 2>&1'
echo "Secret demo is gone"

step "delete the WasmController: its module stops before it goes away"
kubectl delete wasmcontroller configmap-mirror
kubectl get events --field-selector involvedObject.name=configmap-mirror

step "stop the host"
kill -TERM "$host_pid"
wait "$host_pid" && echo "host-shim exited cleanly"
host_pid=""
step "demo complete"
