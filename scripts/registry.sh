#!/usr/bin/env bash
# A real OCI registry (distribution, Debian's docker-registry package) on 127.0.0.1, for the
# tests and the demo that pull modules from a registry. Run with --help for usage.
set -euo pipefail

readonly REGISTRY_PKG="docker-registry"
readonly CACHE_ROOT="${KUBE_WASM_CACHE:-$HOME/.cache/kube-wasm}/registry"
readonly APT_LOG="$CACHE_ROOT/apt.log"
readonly READY_TIMEOUT="${REGISTRY_TIMEOUT:-30}"
export DEBIAN_FRONTEND=noninteractive

usage() {
  cat <<EOF
Usage: ${0##*/} COMMAND [DIR]

Debian's $REGISTRY_PKG (distribution 2.8, the reference OCI registry) on a free loopback port,
plain HTTP, no authentication.

Commands:
  provision   Download and unpack the package (dpkg -x: no service starts) into
              \${KUBE_WASM_CACHE:-\$HOME/.cache/kube-wasm}/registry/<version>. Cached after the
              first run. Prints the registry binary's path on stdout.
  start DIR   Provision, then start the registry with its storage and config under DIR; wait
              until it answers /v2/. Prints the contents of DIR/env on stdout.
  stop DIR    Stop the registry started in DIR (TERM, then KILL). Idempotent.
  -h, --help  Show this help.

Files in DIR after start:
  env            REGISTRY (host:port) and REGISTRY_URL (http://host:port) as KEY=value lines.
  config.yml, registry.log, registry.pid, storage/.

Environment:
  KUBE_WASM_CACHE   cache root (default \$HOME/.cache/kube-wasm)
  REGISTRY_TIMEOUT  seconds to wait for the registry to answer (default 30)
EOF
}

log() { printf '[registry] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=lib/infra.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/infra.sh"

binary_in() { echo "$1/root/usr/bin/docker-registry"; }

# The candidate version of the package, updating the package lists once if there is none.
candidate() {
  local version
  version=$(apt-cache policy "$REGISTRY_PKG" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  if [[ -z $version || $version == "(none)" ]]; then
    apt_quiet update
    version=$(apt-cache policy "$REGISTRY_PKG" | sed -n 's/^ *Candidate: //p')
  fi
  [[ -n $version && $version != "(none)" ]] || die "no $REGISTRY_PKG package in the apt sources"
  echo "$version"
}

provision() {
  mkdir -p "$CACHE_ROOT"
  local cached
  cached=$(find "$CACHE_ROOT" -mindepth 4 -maxdepth 4 -path '*/root/usr/bin/docker-registry' 2>/dev/null | sort | tail -n 1)
  if [[ -n $cached && -x $cached ]]; then
    echo "$cached"
    return 0
  fi
  local version dir work
  version=$(candidate)
  dir="$CACHE_ROOT/$version"
  log "unpacking $REGISTRY_PKG $version (apt log: $APT_LOG)"
  work=$(mktemp -d "$CACHE_ROOT/.work.XXXXXX")
  unpack_debs "$work/debs" "$work/root" "$REGISTRY_PKG=$version"
  [[ -x $(binary_in "$work") ]] || die "the package has no usr/bin/docker-registry"
  rm -rf "$dir" && mkdir -p "$dir"
  mv "$work/root" "$dir/root"
  rm -rf "$work"
  binary_in "$dir"
}

cmd_start() {
  local dir bin port i
  dir=$(mkdir -p "$1" && cd "$1" && pwd -P)
  bin=$(provision)
  stop_pid "$dir/registry.pid" "$dir" registry 5
  port=$(free_ports 1)
  mkdir -p "$dir/storage"
  cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML
  spawn "$dir/registry.pid" "$dir/registry.log" "$bin" serve "$dir/config.yml"
  for ((i = 0; i < READY_TIMEOUT * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf 'REGISTRY=127.0.0.1:%s\nREGISTRY_URL=http://127.0.0.1:%s\n' "$port" "$port" >"$dir/env"
      cat "$dir/env"
      return 0
    fi
    pid_alive "$dir/registry.pid" "$dir" || { tail -n 20 "$dir/registry.log" >&2; die "the registry exited"; }
    sleep 0.1
  done
  tail -n 20 "$dir/registry.log" >&2
  die "the registry did not answer within ${READY_TIMEOUT}s"
}

cmd_stop() {
  local dir
  [[ -d $1 ]] || return 0
  dir=$(cd "$1" && pwd -P)
  stop_pid "$dir/registry.pid" "$dir" registry 5
}

case "${1:-}" in
  provision) provision ;;
  start) [[ $# == 2 ]] || { usage >&2; exit 2; }; cmd_start "$2" ;;
  stop) [[ $# == 2 ]] || { usage >&2; exit 2; }; cmd_stop "$2" ;;
  -h | --help) usage ;;
  *) usage >&2; exit 2 ;;
esac
