#!/usr/bin/env bash
# A real, local Kubernetes control plane — kube-apiserver and etcd built from their Go module
# sources (control-plane/) with the machine's Go. Run with --help for usage.
set -euo pipefail

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly MODULES="$REPO_ROOT/control-plane"
readonly CACHE_ROOT="${KUBE_WASM_CACHE:-$HOME/.cache/kube-wasm}/control-plane"
readonly READY_TIMEOUT="${CONTROL_PLANE_TIMEOUT:-90}"
readonly HEARTBEAT_SECS=15
readonly APT_LOG="$CACHE_ROOT/apt.log"
export DEBIAN_FRONTEND=noninteractive

# The pinned versions (control-plane/<kind>/<version>/), newest last.
pinned() { find "$MODULES/$1" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V; }
KUBE_VERSION="${KUBE_WASM_KUBE_VERSION:-$(pinned kubernetes | tail -n 1)}"
ETCD_VERSION="$(pinned etcd | tail -n 1)"

usage() {
  cat <<EOF
Usage: ${0##*/} [--version VERSION] COMMAND [DIR]

A local kube-apiserver + etcd $ETCD_VERSION on 127.0.0.1, built from Go module sources: the
modules pinned in control-plane/ (go.mod and go.sum committed; control-plane/pin.sh adds a
version). Pinned Kubernetes versions: $(pinned kubernetes | tr '\n' ' ')(default: the newest).

Options:
  --version VERSION      Kubernetes version to build and run (e.g. v1.33.13; also
                         KUBE_WASM_KUBE_VERSION). Must be pinned in control-plane/kubernetes/.

Commands:
  provision              Build kube-apiserver and kubectl of VERSION and etcd into
                         \${KUBE_WASM_CACHE:-\$HOME/.cache/kube-wasm}/control-plane/ (one folder
                         per version and pinned module). Cold: ~5 min on 2 cores, ~2.4 GB peak
                         memory. Cached: instant. Prints the bin directory (kube-apiserver,
                         kubectl, etcd) on stdout.
  provision-node         Also build kube-controller-manager, kube-scheduler and kubelet of
                         VERSION into the same bin directory (for a one-node cluster).
  bin-dir                Print the bin directory of VERSION, built or not.
  start [--node NAME] DIR
                         Provision, then start etcd + kube-apiserver on free loopback ports with
                         all state under DIR; wait until ready and the 'default' namespace exists.
                         Always a fresh cluster: state files from an earlier run in DIR are removed.
                         Prints the contents of DIR/env on stdout.
                         --node NAME: ready for one node NAME (scripts/cluster.sh runs it): the
                         ServiceAccount admission plugin on, a cluster CA (pki/cluster-ca.*) with
                         the apiserver's client certificate for the kubelet, tokens and
                         kubeconfigs for kube-controller-manager, kube-scheduler and the kubelet
                         (system:node:NAME). Without it nothing creates ServiceAccounts, so the
                         ServiceAccount admission plugin is off.
  stop DIR               Stop the processes started in DIR (TERM, then KILL). Idempotent.
  restart-apiserver DIR  Restart only kube-apiserver, same binary, port, flags and serving cert
                         (so the kubeconfig stays valid); etcd keeps running with its data
                         (TERM, KILL after 2 s).
  restart-etcd DIR       Restart only etcd, same ports and data (TERM, KILL after 2 s); kube-apiserver
                         keeps running and reconnects. Returns once etcd is healthy and
                         kube-apiserver's /readyz answers ok again.
  drop-connections DIR   Cut every TCP connection to kube-apiserver (ss -K: the kernel resets both
                         ends, as a network failure would; needs root or CAP_NET_ADMIN and a kernel
                         with INET_DIAG_DESTROY). Every open watch and pooled connection of every
                         client ends; the servers keep running. Prints how many were cut.
  -h, --help             Show this help.

Files in DIR after start:
  env                    KUBECONFIG, APISERVER_URL, APISERVER_PORT, ETCD_PORT, ETCD_PEER_PORT,
                         AUDIT_LOG, KUBE_TOKEN, KUBE_VERSION (the server's gitVersion),
                         CONTROL_PLANE_BIN (its bin directory, kubectl included) as KEY=value
                         lines (source it; 'set -a' to export).
  kubeconfig             context 'kube-wasm', namespace 'default', bearer token (system:masters),
                         certificate-authority-data = the apiserver's self-signed CA.
  audit.log              JSON lines, level Metadata (Request for patch), all stages, written synchronously
                         (--audit-log-mode=blocking); a watch logs stage RequestReceived at once.
  kube-apiserver.log, etcd.log (etcd.log.1: before the last restart-etcd), kube-apiserver.pid, etcd.pid, etcd.ports, kube-apiserver.args
  (one flag a line, reused by restart-apiserver), bin (the bin directory it was started from),
  token, tokens.csv, audit-policy.yaml, pki/ (service-account keys, ca.crt), certs/ (apiserver
  serving cert), etcd-data/. With --node also: kubeconfig-kube-controller-manager,
  kubeconfig-kube-scheduler, kubeconfig-kubelet, pki/cluster-ca.{crt,key},
  pki/apiserver-kubelet-client.{crt,key}, and NODE_NAME in env.

Environment:
  KUBE_WASM_CACHE        cache root (default \$HOME/.cache/kube-wasm)
  KUBE_WASM_KUBE_VERSION the Kubernetes version, as --version
  CONTROL_PLANE_TIMEOUT  seconds to wait for readiness (default 90)
  KUBE_APISERVER_EXTRA_FLAGS  extra kube-apiserver flags for start, whitespace-separated (e.g.
                         --watch-cache=false, so watches from a pre-restart resourceVersion
                         resume instead of getting 410 Expired after restart-apiserver)
EOF
}

log() { printf '[control-plane] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=lib/infra.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/infra.sh"

# ---------------------------------------------------------------------------------------------
# provision: go build from the pinned modules
# ---------------------------------------------------------------------------------------------

# A pinned module's cache folder: its version and a digest of its go.mod and go.sum, so an
# edited pin never reuses binaries built from the old one.
cache_dir_of() {
  local module=$MODULES/$1/$2
  [[ -f $module/go.mod && -f $module/go.sum ]] || die "$1 $2 is not pinned (control-plane/pin.sh $1 $2)"
  printf '%s/%s/%s-%s\n' "$CACHE_ROOT" "$1" "$2" "$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-12)"
}

# Runs a command in the background with output to $log, printing a heartbeat every
# HEARTBEAT_SECS; on failure prints the tail of the log.
run_with_heartbeat() {
  local what=$1 log=$2 start=$SECONDS pid next=$HEARTBEAT_SECS
  shift 2
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - start >= next)); then
      log "still $what… $((SECONDS - start))s ($(tail -n 1 "$log" | cut -c1-100))"
      next=$((next + HEARTBEAT_SECS))
    fi
  done
  if ! wait "$pid"; then
    log "$what failed after $((SECONDS - start))s; last lines of $log:"
    tail -n 40 "$log" >&2
    return 1
  fi
  log "$what done in $((SECONDS - start))s"
}

# go_build KIND VERSION OUT LDFLAGS PACKAGE... — builds the packages of a pinned module into
# OUT with the machine's Go: no resolution (-mod=readonly), every download checked against
# the committed go.sum, static binaries as upstream ships them (CGO_ENABLED=0).
go_build() {
  local kind=$1 version=$2 out=$3 ldflags=$4 cache
  shift 4
  cache=$(cache_dir_of "$kind" "$version")
  mkdir -p "$cache" "$CACHE_ROOT/go-build"
  run_with_heartbeat "building $kind $version: ${*##*/}" "$cache/build.log" \
    env -C "$MODULES/$kind/$version" GOTOOLCHAIN=local GOFLAGS=-mod=readonly GOWORK=off \
    CGO_ENABLED=0 GOCACHE="$CACHE_ROOT/go-build" \
    go build -trimpath -ldflags "$ldflags" -o "$out/" "$@"
}

# The version stamp `kube-apiserver --version` and `/version` report, as upstream's
# hack/lib/version.sh sets it.
kube_ldflags() {
  local v=$1 minor
  minor=${v#v1.}
  minor=${minor%%.*}
  printf '%s ' -s -w \
    "-X k8s.io/component-base/version.gitVersion=$v" \
    "-X k8s.io/component-base/version.gitMajor=1" \
    "-X k8s.io/component-base/version.gitMinor=$minor" \
    "-X k8s.io/component-base/version.gitTreeState=clean" \
    "-X k8s.io/client-go/pkg/version.gitVersion=$v" \
    "-X k8s.io/client-go/pkg/version.gitMajor=1" \
    "-X k8s.io/client-go/pkg/version.gitMinor=$minor"
}

bin_dir() { printf '%s/bin\n' "$(cache_dir_of kubernetes "$KUBE_VERSION")"; }

# Builds the named Kubernetes commands and etcd that bin/ lacks. Binaries are built into a
# temporary folder and moved in one by one, so bin/ never holds half a binary.
provision_locked() {
  local bin cmd missing=() work t0=$SECONDS
  bin=$(bin_dir)
  for cmd in "$@"; do [[ -x $bin/$cmd ]] || missing+=("$cmd"); done
  [[ -x $bin/etcd ]] || missing+=(etcd)
  ((${#missing[@]})) || return 0
  command -v go >/dev/null || die "no Go toolchain on PATH (the polyglot machines have Go 1.26)"
  mkdir -p "$bin"
  work=$(mktemp -d "$bin/../build.XXXXXX")
  # shellcheck disable=SC2064 # expand $work now
  trap "rm -rf '$work'" EXIT
  local pkgs=()
  for cmd in "${missing[@]}"; do [[ $cmd == etcd ]] || pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
  if ((${#pkgs[@]})); then
    log "building ${pkgs[*]##*/} $KUBE_VERSION from module sources (cold: ~4 min for kube-apiserver on 2 cores)"
    go_build kubernetes "$KUBE_VERSION" "$work" "$(kube_ldflags "$KUBE_VERSION")" "${pkgs[@]}"
  fi
  if [[ ! -x $bin/etcd ]]; then
    log "building etcd $ETCD_VERSION from module sources"
    go_build etcd "$ETCD_VERSION" "$work" "-s -w" go.etcd.io/etcd/server/v3
    mv "$work/server" "$work/etcd"  # go names the binary after go.etcd.io/etcd/server/v3
  fi
  for cmd in "${missing[@]}"; do
    if [[ $cmd == kubectl ]]; then "$work/$cmd" version --client >/dev/null; else "$work/$cmd" --version >/dev/null; fi \
      || die "the $cmd just built does not run"
    mv -f "$work/$cmd" "$bin/"
  done
  rm -rf "$work"
  trap - EXIT
  log "provisioned ${missing[*]} in $((SECONDS - t0))s: $("$bin/kube-apiserver" --version 2>/dev/null || echo "$KUBE_VERSION"), etcd $ETCD_VERSION"
}

provision() {
  local bin cmd done=1
  bin=$(bin_dir)
  for cmd in "$@" etcd; do [[ -x $bin/$cmd ]] || done=0; done
  ((done)) && return 0
  mkdir -p "$CACHE_ROOT"
  exec 9>"$CACHE_ROOT/.provision.lock"
  local t0=$SECONDS
  until flock -w "$HEARTBEAT_SECS" 9; do
    log "waiting for another provision to finish… $((SECONDS - t0))s"
  done
  provision_locked "$@"
  exec 9>&-
}

readonly CONTROL_PLANE_CMDS=(kube-apiserver kubectl)
NODE_NAME=""  # start --node NAME
readonly NODE_CMDS=(kube-controller-manager kube-scheduler kubelet)

# ---------------------------------------------------------------------------------------------
# start / stop / restart-apiserver
# ---------------------------------------------------------------------------------------------

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd -P); }

write_static_config() {
  local dir=$1 token
  rm -rf "$dir/etcd-data" "$dir/certs" "$dir/pki" "$dir/tokens"
  rm -f "$dir"/{audit.log,etcd.log,kube-apiserver.log,kubeconfig,kubeconfig-*,env,kube-apiserver.args,node-name}
  mkdir -p "$dir/pki" "$dir/certs"
  token=$(openssl rand -hex 24)
  (umask 077
    printf '%s\n' "$token" >"$dir/token"
    printf '%s,kube-wasm-admin,kube-wasm-admin,"system:masters"\n' "$token" >"$dir/tokens.csv"
    openssl genrsa -out "$dir/pki/sa.key" 2048 2>/dev/null)
  openssl rsa -in "$dir/pki/sa.key" -pubout -out "$dir/pki/sa.pub" 2>/dev/null
  [[ -z $NODE_NAME ]] || write_node_credentials "$dir"
  cat >"$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  # Patch bodies (the parity suite compares their shapes); everything else: metadata only.
  - level: Request
    verbs: ["patch"]
  - level: Metadata
EOF
}

# For a node (--node): the cluster CA the kubelet trusts for clients and the apiserver for the
# kubelet's serving certificate, the apiserver's client certificate for the kubelet, and a
# static token for each component (its user and groups as kubeadm's certificates name them).
write_node_credentials() {
  local dir=$1 component user groups t
  (umask 077; openssl genrsa -out "$dir/pki/cluster-ca.key" 2048 2>/dev/null)
  openssl req -x509 -new -key "$dir/pki/cluster-ca.key" -subj /CN=kube-wasm-cluster-ca \
    -days 30 -out "$dir/pki/cluster-ca.crt" 2>/dev/null
  issue_cert "$dir/pki/cluster-ca" "$dir/pki/apiserver-kubelet-client" /CN=kube-apiserver-kubelet-client
  mkdir -p "$dir/tokens"
  printf '%s\n' "$NODE_NAME" >"$dir/node-name"
  for component in kube-controller-manager kube-scheduler kubelet; do
    case $component in
      kubelet) user=system:node:$NODE_NAME groups=system:nodes ;;
      *) user=system:$component groups= ;;
    esac
    t=$(openssl rand -hex 24)
    (umask 077
      printf '%s\n' "$t" >"$dir/tokens/$component"
      printf '%s,%s,%s,"%s"\n' "$t" "$user" "$user" "$groups" >>"$dir/tokens.csv")
  done
}

start_etcd() {
  local dir=$1 client=$2 peer=$3 i
  spawn "$dir/etcd.pid" "$dir/etcd.log" "$(<"$dir/bin")/etcd" \
    --name=kube-wasm --data-dir="$dir/etcd-data" --logger=zap --log-outputs=stderr \
    --listen-client-urls="http://127.0.0.1:$client" \
    --advertise-client-urls="http://127.0.0.1:$client" \
    --listen-peer-urls="http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls="http://127.0.0.1:$peer" \
    --initial-cluster="kube-wasm=http://127.0.0.1:$peer"
  for ((i = 0; i < 200; i++)); do
    pid_alive "$dir/etcd.pid" "$dir/" || return 1
    [[ $(curl -sf "http://127.0.0.1:$client/health" 2>/dev/null) == *'"health":"true"'* ]] && return 0
    sleep 0.1
  done
  return 1
}

write_apiserver_args() {
  local dir=$1 port=$2 etcd_port=$3
  cat >"$dir/kube-apiserver.args" <<EOF
--etcd-servers=http://127.0.0.1:$etcd_port
--bind-address=127.0.0.1
--advertise-address=127.0.0.1
--endpoint-reconciler-type=none
--secure-port=$port
--cert-dir=$dir/certs
--token-auth-file=$dir/tokens.csv
--authorization-mode=Node,RBAC
--service-account-issuer=https://kubernetes.default.svc.cluster.local
--service-account-key-file=$dir/pki/sa.pub
--service-account-signing-key-file=$dir/pki/sa.key
--service-cluster-ip-range=10.96.0.0/24
$(admission_and_kubelet_flags "$dir")
--audit-policy-file=$dir/audit-policy.yaml
--audit-log-path=$dir/audit.log
--audit-log-mode=blocking
EOF
  local extra
  for extra in ${KUBE_APISERVER_EXTRA_FLAGS:-}; do printf '%s\n' "$extra"; done >>"$dir/kube-apiserver.args"
}

# Without a node nothing creates ServiceAccounts, so the ServiceAccount admission plugin
# (which refuses Pods of missing ones and mounts their tokens) is off; with one it is on, and
# the apiserver reaches the kubelet (logs, exec, port-forward) with its client certificate,
# checking the kubelet's serving certificate against the cluster CA.
admission_and_kubelet_flags() {
  local dir=$1
  if [[ -z $NODE_NAME ]]; then
    echo "--disable-admission-plugins=ServiceAccount"
    return
  fi
  printf '%s\n' "--kubelet-client-certificate=$dir/pki/apiserver-kubelet-client.crt" \
    "--kubelet-client-key=$dir/pki/apiserver-kubelet-client.key" \
    "--kubelet-certificate-authority=$dir/pki/cluster-ca.crt" \
    "--kubelet-preferred-address-types=InternalIP"
}

start_apiserver() {
  local dir=$1 args
  mapfile -t args <"$dir/kube-apiserver.args"
  spawn "$dir/kube-apiserver.pid" "$dir/kube-apiserver.log" "$(<"$dir/bin")/kube-apiserver" "${args[@]}"
}

apiserver_port() { sed -n 's/^--secure-port=//p' "$1/kube-apiserver.args"; }

# Prints the CA for the apiserver's self-signed serving cert: v1.20 writes the leaf followed
# by its CA into certs/apiserver.crt; a single self-signed cert is its own CA.
extract_ca() {
  awk '/-----BEGIN CERTIFICATE-----/ { n++ } { cert[n] = cert[n] $0 "\n" }
       END { for (i = (n > 1 ? 2 : 1); i <= n; i++) printf "%s", cert[i] }' "$1"
}

# kubeconfig DIR USER TOKEN: a kubeconfig for DIR's apiserver as USER with bearer TOKEN.
kubeconfig() {
  local dir=$1 user=$2 token=$3 port ca
  port=$(apiserver_port "$dir")
  ca=$(base64 -w0 <"$dir/pki/ca.crt")
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: kube-wasm
    cluster:
      server: https://127.0.0.1:$port
      certificate-authority-data: $ca
users:
  - name: $user
    user:
      token: $token
contexts:
  - name: kube-wasm
    context:
      cluster: kube-wasm
      user: $user
      namespace: default
current-context: kube-wasm
EOF
}

write_client_files() {
  local dir=$1 port token component
  port=$(apiserver_port "$dir")
  token=$(<"$dir/token")
  extract_ca "$dir/certs/apiserver.crt" >"$dir/pki/ca.crt"
  (umask 077
    kubeconfig "$dir" kube-wasm-admin "$token" >"$dir/kubeconfig"
    if [[ -f $dir/node-name ]]; then
      for component in kube-controller-manager kube-scheduler kubelet; do
        kubeconfig "$dir" "$component" "$(<"$dir/tokens/$component")" >"$dir/kubeconfig-$component"
      done
    fi
    local kv
    for kv in "KUBECONFIG=$dir/kubeconfig" "APISERVER_URL=https://127.0.0.1:$port" \
      "APISERVER_PORT=$port" "$(grep '^ETCD_PORT=' "$dir/etcd.ports")" \
      "$(grep '^ETCD_PEER_PORT=' "$dir/etcd.ports")" "AUDIT_LOG=$dir/audit.log" \
      "KUBE_TOKEN=$token" "KUBE_VERSION=$("$(<"$dir/bin")/kube-apiserver" --version | awk '{print $2}')" \
      "CONTROL_PLANE_BIN=$(<"$dir/bin")"; do
      printf '%s=%q\n' "${kv%%=*}" "${kv#*=}"
    done >"$dir/env"
    [[ ! -f $dir/node-name ]] || printf 'NODE_NAME=%q\n' "$(<"$dir/node-name")" >>"$dir/env")
}

# Waits for /readyz and then for the `default` namespace (created ~1 s after readyz).
wait_ready() {
  local dir=$1 port token deadline=$((SECONDS + READY_TIMEOUT)) phase=readyz url
  port=$(apiserver_port "$dir")
  token=$(<"$dir/token")
  while ((SECONDS < deadline)); do
    pid_alive "$dir/kube-apiserver.pid" "$dir/" || { ready_failed "$dir" "kube-apiserver exited"; return 1; }
    if [[ $phase == readyz ]]; then
      [[ -s $dir/certs/apiserver.crt ]] \
        && [[ $(curl -sk -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" 2>/dev/null) == ok ]] \
        && { write_client_files "$dir"; phase=namespace; continue; }
    else
      url="https://127.0.0.1:$port/api/v1/namespaces/default"
      [[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/pki/ca.crt" \
        -H "Authorization: Bearer $token" "$url" 2>/dev/null) == 200 ]] && return 0
    fi
    sleep 0.2
  done
  ready_failed "$dir" "not ready after ${READY_TIMEOUT}s (waiting for $phase)"
  return 1
}

ready_failed() {
  log "error: kube-apiserver in $1: $2; last lines of $1/kube-apiserver.log:"
  tail -n 30 "$1/kube-apiserver.log" >&2 || true
}

stop_all() {
  stop_pid "$1/kube-apiserver.pid" "$1/" kube-apiserver
  stop_pid "$1/etcd.pid" "$1/" etcd
}

cmd_start() {
  local dir ports attempt t0=$SECONDS
  dir=$(abs_dir "$1")
  if pid_alive "$dir/kube-apiserver.pid" "$dir/" || pid_alive "$dir/etcd.pid" "$dir/"; then
    die "a control plane is already running in $dir; run: ${0##*/} stop $dir"
  fi
  provision "${CONTROL_PLANE_CMDS[@]}"
  ensure_commands openssl:openssl curl:curl
  write_static_config "$dir"
  bin_dir >"$dir/bin"
  # shellcheck disable=SC2064 # expand $dir now
  trap "stop_all '$dir'" EXIT  # never leave half a control plane behind
  for attempt in 1 2 3; do  # retried only if a port was taken between picking and binding
    read -r -a ports <<<"$(free_ports 3)"
    printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\n' "${ports[0]}" "${ports[1]}" >"$dir/etcd.ports"
    log "starting etcd on 127.0.0.1:${ports[0]}"
    start_etcd "$dir" "${ports[0]}" "${ports[1]}" && break
    stop_pid "$dir/etcd.pid" "$dir/" etcd
    grep -q 'address already in use' "$dir/etcd.log" && ((attempt < 3)) && continue
    tail -n 20 "$dir/etcd.log" >&2
    die "etcd did not become healthy"
  done
  write_apiserver_args "$dir" "${ports[2]}" "${ports[0]}"
  log "starting kube-apiserver on https://127.0.0.1:${ports[2]}"
  start_apiserver "$dir"
  wait_ready "$dir" || exit 1
  trap - EXIT
  log "ready in $((SECONDS - t0))s; kubeconfig: $dir/kubeconfig"
  cat "$dir/env"
}

cmd_stop() {
  local dir
  [[ -d $1 ]] || return 0
  dir=$(cd "$1" && pwd -P)
  stop_all "$dir"
}

cmd_restart_apiserver() {
  local dir port i t0=$SECONDS
  dir=$(cd "$1" 2>/dev/null && pwd -P) || die "no such directory: $1"
  [[ -f $dir/kube-apiserver.args ]] || die "$dir has no control plane; run: ${0##*/} start $dir"
  pid_alive "$dir/etcd.pid" "$dir/" || die "etcd is not running in $dir"
  # kube-apiserver drains open watches on TERM; after 2 s it is killed, as a crash would end
  # it (etcd keeps everything it acknowledged).
  stop_pid "$dir/kube-apiserver.pid" "$dir/" kube-apiserver 2
  port=$(apiserver_port "$dir")
  for ((i = 0; i < 100; i++)); do port_free "$port" && break; sleep 0.1; done
  port_free "$port" || die "port $port is still in use"
  log "restarting kube-apiserver on https://127.0.0.1:$port"
  start_apiserver "$dir"
  wait_ready "$dir" || exit 1
  log "ready in $((SECONDS - t0))s"
}

cmd_restart_etcd() {
  local dir client peer i t0=$SECONDS port token
  dir=$(cd "$1" 2>/dev/null && pwd -P) || die "no such directory: $1"
  [[ -f $dir/etcd.ports ]] || die "$dir has no control plane; run: ${0##*/} start $dir"
  client=$(sed -n 's/^ETCD_PORT=//p' "$dir/etcd.ports")
  peer=$(sed -n 's/^ETCD_PEER_PORT=//p' "$dir/etcd.ports")
  stop_pid "$dir/etcd.pid" "$dir/" etcd 2
  for ((i = 0; i < 100; i++)); do port_free "$client" && port_free "$peer" && break; sleep 0.1; done
  port_free "$client" && port_free "$peer" || die "etcd's ports $client/$peer are still in use"
  log "restarting etcd on 127.0.0.1:$client"
  mv -f "$dir/etcd.log" "$dir/etcd.log.1" 2>/dev/null || true
  start_etcd "$dir" "$client" "$peer" || { tail -n 20 "$dir/etcd.log" >&2; die "etcd did not become healthy"; }
  # kube-apiserver's etcd client reconnects by itself; ready means it serves from etcd again.
  port=$(apiserver_port "$dir")
  token=$(<"$dir/token")
  for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
    [[ $(curl -sk -H "Authorization: Bearer $token" "https://127.0.0.1:$port/readyz" 2>/dev/null) == ok ]] && {
      log "ready in $((SECONDS - t0))s"
      return 0
    }
    sleep 0.2
  done
  ready_failed "$dir" "not ready ${READY_TIMEOUT}s after etcd restarted"
  return 1
}

cmd_drop_connections() {
  local dir port cut
  dir=$(cd "$1" 2>/dev/null && pwd -P) || die "no such directory: $1"
  [[ -f $dir/kube-apiserver.args ]] || die "$dir has no control plane; run: ${0##*/} start $dir"
  pid_alive "$dir/kube-apiserver.pid" "$dir/" || die "kube-apiserver is not running in $dir"
  ensure_commands ss:iproute2
  port=$(apiserver_port "$dir")
  # ss -K lists the sockets it destroyed (after one header line); connections the
  # apiserver makes to itself are cut too.
  cut=$(ss -K -t -n state established dst "127.0.0.1:$port" | tail -n +2 | grep -c . || true)
  log "cut $cut connection(s) to kube-apiserver on port $port"
  echo "$cut"
}

main() {
  trap 'exit 130' INT  # make sure EXIT traps (cleanup) run on interrupt
  trap 'exit 143' TERM
  if [[ ${1:-} == --version ]]; then
    [[ -n ${2:-} ]] || { usage >&2; exit 2; }
    KUBE_VERSION=$2
    [[ $KUBE_VERSION == v* ]] || KUBE_VERSION=v$KUBE_VERSION
    shift 2
  elif [[ ${1:-} == --version=* ]]; then
    KUBE_VERSION=${1#--version=}
    [[ $KUBE_VERSION == v* ]] || KUBE_VERSION=v$KUBE_VERSION
    shift
  fi
  [[ -n $KUBE_VERSION && -n $ETCD_VERSION ]] || die "no Kubernetes or etcd version pinned in $MODULES"
  local cmd=${1:-}
  case $cmd in
    -h | --help | help) usage ;;
    provision) provision "${CONTROL_PLANE_CMDS[@]}" && bin_dir ;;
    provision-node) provision "${CONTROL_PLANE_CMDS[@]}" "${NODE_CMDS[@]}" && bin_dir ;;
    bin-dir) bin_dir ;;
    start | stop | restart-apiserver | restart-etcd | drop-connections)
      if [[ $cmd == start && ${2:-} == --node ]]; then
        [[ $# == 4 && $3 =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || { usage >&2; exit 2; }
        NODE_NAME=$3
        set -- start "$4"
      fi
      [[ $# == 2 && -n $2 ]] || { usage >&2; exit 2; }
      case $cmd in
        start) cmd_start "$2" ;;
        stop) cmd_stop "$2" ;;
        restart-apiserver) cmd_restart_apiserver "$2" ;;
        restart-etcd) cmd_restart_etcd "$2" ;;
        drop-connections) cmd_drop_connections "$2" ;;
      esac
      ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
