#!/usr/bin/env bash
# The Go side of the test command (scripts/test.sh runs it in the background while the Rust
# steps build): for each Go module of the repository — the SDK (kube-wasm-go), the Go
# example and the e2e Go guests — gofmt, go vet natively and for wasip1, go test (the SDK,
# against its fake host), and the programs the end-to-end tests run, built natively into
# target/debug and as reactor modules into target/wasm32-wasip1/debug, where the e2e kit
# finds the Rust ones.
#
# Modules are pinned by their go.mod and go.sum (-mod=readonly: nothing is resolved); the
# build and module caches live under ~/.cache/kube-wasm, so a warm machine rebuilds little.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [go %d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
export GOCACHE="${GOCACHE_KUBE_WASM:-$HOME/.cache/kube-wasm/go-build}"
export GOMODCACHE="${GOMODCACHE_KUBE_WASM:-$HOME/.cache/kube-wasm/go-mod}"
modules=(kube-wasm-go examples/go-configmap-mirror examples/go-controller-runtime e2e/go-guests)
native_out="$PWD/target/debug"
wasm_out="$PWD/target/wasm32-wasip1/debug"
mkdir -p "$native_out" "$wasm_out"

step "gofmt"
unformatted=$(gofmt -l "${modules[@]}")
if [[ -n $unformatted ]]; then
  echo "not gofmt-formatted:" >&2
  echo "$unformatted" >&2
  exit 1
fi

for module in "${modules[@]}"; do
  step "go vet $module (native and wasip1)"
  (cd "$module" && go vet ./... && GOOS=wasip1 GOARCH=wasm go vet ./...)
done

step "go test kube-wasm-go (fake host)"
(cd kube-wasm-go && go test ./...)

step "build the Go programs: natively, and as reactor modules for wasip1"
(
  cd examples/go-configmap-mirror
  go build -o "$native_out/go-configmap-mirror" .
  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$wasm_out/go-configmap-mirror.wasm" .
)
(
  cd examples/go-controller-runtime
  go build -o "$native_out/go-controller-runtime" .
  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$wasm_out/go-controller-runtime.wasm" .
)
(
  cd e2e/go-guests
  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$wasm_out/go-hostile.wasm" ./go-hostile
  go build -o "$native_out/go-sample-controller" ./go-sample-controller
  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$wasm_out/go-sample-controller.wasm" ./go-sample-controller
)
step "go: done"
