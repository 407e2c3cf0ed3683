#!/usr/bin/env bash
# Pins one version of Kubernetes or etcd as a Go module of its own, whose go.mod and go.sum
# are committed so that scripts/control-plane.sh builds it on a fresh machine without
# resolving anything (every download is checked against the committed go.sum).
#
#   control-plane/pin.sh kubernetes v1.37.2   # writes control-plane/kubernetes/v1.37.2/
#   control-plane/pin.sh etcd v3.6.16         # writes control-plane/etcd/v3.6.16/
#
# Needs the Go module proxy. k8s.io/kubernetes requires its staging modules (k8s.io/api,
# k8s.io/apiserver, …) at v0.0.0 and replaces them with ./staging/src/…, which a module zip
# does not carry; the pinned module replaces each with its published v0.MINOR.PATCH instead
# (the way projects that import k8s.io/kubernetes build it), keeps upstream's `go` and
# `godebug` lines, and names the commands it builds as `tool`s so `go mod tidy` keeps every
# module they need. etcd's server module replaces its sibling modules with ../ paths, so it
# cannot be `go install`ed either: the pinned module requires it like a library.
set -euo pipefail
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# == 2 ]] || usage
kind=$1 version=$2
[[ $version == v* ]] || version=v$version
dir="$(cd "$(dirname "$0")" && pwd)/$kind/$version"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case $kind in
  kubernetes)
    upstream=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
    [[ -f $upstream ]] || { echo "k8s.io/kubernetes@$version: no go.mod downloaded" >&2; exit 1; }
    staging=v0.${version#v1.}
    {
      printf 'module kube-wasm/control-plane/kubernetes\n\n'
      grep '^go ' "$upstream"
      grep '^godebug' "$upstream" || true
      printf '\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$version"
      awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$upstream"
      printf ')\n\n// The commands scripts/control-plane.sh builds.\ntool (\n'
      for cmd in kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet; do
        printf '\tk8s.io/kubernetes/cmd/%s\n' "$cmd"
      done
      printf ')\n'
    } >"$tmp/go.mod"
    ;;
  etcd)
    printf 'module kube-wasm/control-plane/etcd\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n\n// The command scripts/control-plane.sh builds (etcd'"'"'s main package).\ntool go.etcd.io/etcd/server/v3\n' "$version" >"$tmp/go.mod"
    ;;
  *) usage ;;
esac

(cd "$tmp" && go mod tidy)
mkdir -p "$dir"
cp "$tmp/go.mod" "$tmp/go.sum" "$dir/"
echo "pinned $kind $version in $dir"
