#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine: the control plane of control-plane.sh, plus
# kube-controller-manager, kube-scheduler and a kubelet built from the same pinned module
# sources, with Debian's containerd, runc and CNI plugins. Run with --help for usage.
set -euo pipefail
# The node's tools (sysctl, iptables, ip, modprobe) are in sbin, which a shell started without
# a login environment (env -i, some CI runners) may leave off PATH.
export PATH="$PATH:/usr/sbin:/sbin"

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly CONTROL_PLANE="$REPO_ROOT/scripts/control-plane.sh"
readonly CACHE_ROOT="${KUBE_WASM_CACHE:-$HOME/.cache/kube-wasm}/cluster"
readonly APT_LOG="$CACHE_ROOT/apt.log"
readonly READY_TIMEOUT="${CLUSTER_TIMEOUT:-180}"
readonly NODE_NAME=kube-wasm-node
# The Pods' network: a bridge on this machine, its own address the node's. Pods have no
# default route, only routes to their subnet and to the Service range.
readonly BRIDGE=kwasm0
readonly POD_SUBNET=10.244.0.0/24
readonly NODE_IP=10.244.0.1
readonly SERVICE_RANGE=10.96.0.0/24  # control-plane.sh's --service-cluster-ip-range
readonly KUBERNETES_SERVICE_IP=10.96.0.1
readonly PAUSE_IMAGE=kube-wasm.local/pause:3.10
readonly NAT_CHAIN=KUBE-WASM
readonly FORWARD_CHAIN=KUBE-WASM-FORWARD
# Which folder's cluster made the bridge and the chains (one per machine).
readonly OWNER_FILE=/run/kube-wasm/cluster
export DEBIAN_FRONTEND=noninteractive

usage() {
  cat <<EOF
Usage: ${0##*/} COMMAND [OPTIONS] [DIR]

One node, $NODE_NAME, on this machine: kube-apiserver + etcd (control-plane.sh start --node),
kube-controller-manager, kube-scheduler and the kubelet of the same pinned Kubernetes version,
Debian's containerd and runc (cgroupfs driver), Pods on the bridge $BRIDGE ($POD_SUBNET, no
default route, no forwarding off the bridge). Every server listens on 127.0.0.1 except the
kubelet, which listens on the node's address $NODE_IP (a kubelet refuses a loopback node IP).
One cluster per machine (the bridge and the iptables chains are the machine's).

The node has no kube-proxy: the apiserver and the registry listen on loopback, and Services
cannot have loopback endpoints. Instead two DNAT rules of a kube-proxy's kind (chain
$NAT_CHAIN, with route_localnet on the bridge) take Pods' connections to the 'kubernetes'
Service ($KUBERNETES_SERVICE_IP:443, what in-cluster configuration reads from
KUBERNETES_SERVICE_HOST) to the apiserver, and to $NODE_IP:REGISTRY_PORT to the registry.

What it changes on this machine while it runs, and puts back on stop: the bridge, the chains
$NAT_CHAIN (nat) and $FORWARD_CHAIN (filter), cgroups below this session's own memory cgroup
(the same path in every v1 hierarchy), and the kernel settings a kubelet sets on start
(vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1, …; saved first).
Where this process lacks CAP_SYS_RESOURCE (a negative oom_score_adj is refused), containerd
keeps containers' oom_score_adj at least its own (restrict_oom_score_adj) and the kubelet
keeps its own at 0: otherwise runc fails every sandbox ("can't get final child's PID from
pipe") and the kubelet logs that it cannot set -999.

Commands:
  provision        Build kube-controller-manager, kube-scheduler and kubelet (control-plane.sh
                   provision-node), install containerd, runc, containernetworking-plugins,
                   iptables, musl-tools, umoci and skopeo from Debian, and build the Pods'
                   sandbox ("pause") image from the pinned module's build/pause/linux/pause.c,
                   cached under \${KUBE_WASM_CACHE:-\$HOME/.cache/kube-wasm}/cluster.
  start [--registry HOST:PORT] DIR
                   Provision, start everything with its state under DIR (the control plane's
                   files as control-plane.sh writes them, the node's under DIR/node) and wait
                   until the node is Ready. --registry: a plain-HTTP registry on 127.0.0.1
                   (scripts/registry.sh) the node pulls from, which Pods reach as
                   $NODE_IP:PORT. Prints DIR/env on stdout.
  stop DIR         Stop the node (the kubelet, every Pod's containers, containerd, the
                   controllers), unmount its volumes, remove its cgroups, bridge and iptables
                   rules, put back the kernel settings the kubelet changed, then stop the
                   control plane. Idempotent.
  -h, --help       Show this help.

Files in DIR after start, besides control-plane.sh's:
  env              control-plane.sh's, plus NODE_NAME, NODE_IP, POD_REGISTRY (HOST:PORT Pods
                   use for the registry), CONTAINERD_ADDRESS.
  node/            containerd/ (config.toml, socket, root, state), cni/, kubelet/ (root dir),
                   kubelet.yaml, pod-logs/, pki/kubelet.{crt,key} (serving, signed by the
                   cluster CA), *.log and *.pid of containerd, kube-controller-manager,
                   kube-scheduler and kubelet, sysctl.saved, cgroups.created.

Environment:
  KUBE_WASM_CACHE  cache root (default \$HOME/.cache/kube-wasm)
  CLUSTER_TIMEOUT  seconds to wait for the node to be Ready (default 180)
EOF
}

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=lib/infra.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/infra.sh"
# shellcheck source=lib/oci.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/oci.sh"

# ---------------------------------------------------------------------------------------------
# provision
# ---------------------------------------------------------------------------------------------

ensure_node_packages() {
  mkdir -p "$CACHE_ROOT"
  ensure_commands containerd:containerd runc:runc iptables:iptables musl-gcc:musl-tools \
    ip:iproute2 openssl:openssl curl:curl
  ensure_oci_tools
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] \
    || apt_retry install -y --no-install-recommends containernetworking-plugins
}

kube_version() { "$CONTROL_PLANE" bin-dir | sed -n 's|.*/kubernetes/\(v[^-/]*\)-.*|\1|p'; }

# The sandbox image: upstream's pause.c, built static with musl-gcc, as a docker archive ctr can
# import (no registry needed). Cached per Kubernetes version.
pause_archive() { printf '%s/pause/%s/pause.tar\n' "$CACHE_ROOT" "$(kube_version)"; }

provision_pause() {
  local archive version source work
  archive=$(pause_archive)
  [[ -s $archive ]] && return 0
  version=$(kube_version)
  source=$(env -C "$REPO_ROOT/control-plane/kubernetes/$version" GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
    GOWORK=off go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -f $source/build/pause/linux/pause.c ]] || die "no build/pause/linux/pause.c in k8s.io/kubernetes@$version"
  work=$(mktemp -d)
  mkdir -p "$work/rootfs" "$(dirname "$archive")"
  musl-gcc -Os -static -Wall -Werror -DVERSION="$version-kube-wasm" \
    -o "$work/rootfs/pause" "$source/build/pause/linux/pause.c"
  strip "$work/rootfs/pause"
  oci_image "$work/layout" pause "$work/rootfs" 1970-01-01T00:00:00Z \
    --config.entrypoint /pause --config.user 65535:65535
  skopeo copy --quiet "oci:$work/layout:pause" "docker-archive:$archive.tmp:$PAUSE_IMAGE" >&2
  mv "$archive.tmp" "$archive"
  rm -rf "$work"
  log "built the sandbox image $PAUSE_IMAGE from pause.c of Kubernetes $version"
}

cmd_provision() {
  ensure_node_packages
  "$CONTROL_PLANE" provision-node >/dev/null
  provision_pause
}

# ---------------------------------------------------------------------------------------------
# start
# ---------------------------------------------------------------------------------------------

env_value() { sed -n "s/^$2=//p" "$1/env"; }
kubectl_in() { "$(<"$1/bin")/kubectl" --kubeconfig "$1/kubeconfig" "${@:2}"; }

# The kubelet's cgroups live under this session's own memory cgroup (the same path in every
# hierarchy, as the cgroupfs driver wants it): Pods are accounted where their starter is.
cgroup_root() {
  local memory
  memory=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
  [[ -n $memory ]] || die "no cgroup v1 memory hierarchy (this node script uses cgroup v1's cgroupfs layout)"
  printf '%s/kube-wasm\n' "${memory%/}"
}

# Creates the cgroup root in every v1 hierarchy, recording each folder it made (stop removes
# them, deepest first). New cpuset folders get their parent's CPUs and memory nodes (an empty
# cpuset takes no task).
make_cgroup_root() {
  local node=$1 root=$2 hierarchy path part
  : >"$node/cgroups.created"
  for hierarchy in /sys/fs/cgroup/*/; do
    # The unified (v2) hierarchy of a hybrid layout too: runc makes the same path there.
    [[ -f $hierarchy/cgroup.procs ]] || continue
    path=${hierarchy%/}
    IFS=/ read -r -a parts <<<"${root#/}"
    for part in "${parts[@]}"; do
      if [[ ! -d $path/$part ]]; then
        mkdir "$path/$part"
        echo "$path/$part" >>"$node/cgroups.created"
        if [[ -f $path/cpuset.cpus ]]; then
          cat "$path/cpuset.cpus" >"$path/$part/cpuset.cpus"
          cat "$path/cpuset.mems" >"$path/$part/cpuset.mems"
        fi
      fi
      path=$path/$part
    done
  done
}

# The kernel settings the kubelet sets on start (its setupKernelTunables); stop restores them.
readonly KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

save_sysctls() {
  local key
  for key in "${KUBELET_SYSCTLS[@]}"; do printf '%s=%s\n' "$key" "$(sysctl -n "$key")"; done >"$1/sysctl.saved"
}

setup_network() {
  local node=$1 api_port=$2 registry_port=$3 owner
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    owner=$(cat "$OWNER_FILE" 2>/dev/null || true)
    if [[ -n $owner ]] && pid_alive "$owner/node/containerd.pid" "$owner/"; then
      die "bridge $BRIDGE exists: the cluster in $owner runs (${0##*/} stop $owner)"
    fi
    log "removing the network a stopped cluster left behind (${owner:-unknown folder})"
    remove_network
  fi
  mkdir -p "${OWNER_FILE%/*}"
  printf '%s\n' "${node%/node}" >"$OWNER_FILE"
  echo "$BRIDGE" >"$node/bridge"
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/${POD_SUBNET#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Connections from the bridge to 127.0.0.1 (after DNAT) are not martians.
  sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
  iptables -w -t nat -N "$NAT_CHAIN"
  iptables -w -t nat -A PREROUTING -i "$BRIDGE" -j "$NAT_CHAIN"
  iptables -w -t nat -A "$NAT_CHAIN" -d "$KUBERNETES_SERVICE_IP/32" -p tcp --dport 443 \
    -j DNAT --to-destination "127.0.0.1:$api_port"
  if [[ -n $registry_port ]]; then
    iptables -w -t nat -A "$NAT_CHAIN" -d "$NODE_IP/32" -p tcp --dport "$registry_port" \
      -j DNAT --to-destination "127.0.0.1:$registry_port"
  fi
  # Nothing from the Pods leaves the bridge for another interface.
  iptables -w -N "$FORWARD_CHAIN"
  iptables -w -I FORWARD -i "$BRIDGE" -j "$FORWARD_CHAIN"
  iptables -w -A "$FORWARD_CHAIN" ! -o "$BRIDGE" -j DROP
}

write_cni_config() {
  local node=$1
  mkdir -p "$node/cni/net.d" "$node/cni/ipam"
  cat >"$node/cni/net.d/10-kube-wasm.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kube-wasm",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$node/cni/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "$SERVICE_RANGE", "gw": "$NODE_IP"}]
      }
    }
  ]
}
EOF
}

# True if this process may lower its oom_score_adj (CAP_SYS_RESOURCE).
may_lower_oom_score() {
  local caps
  caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
  (( (16#$caps >> 24) & 1 ))
}

restrict_oom() { if may_lower_oom_score; then echo false; else echo true; fi; }

write_containerd_config() {
  local node=$1 registry=$2 c=$1/containerd
  mkdir -p "$c/certs.d"
  cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # Without CAP_SYS_RESOURCE (withheld in some sandboxes, e.g. Firecracker session VMs) a
  # negative oom_score_adj is refused (EACCES) and runc cannot start the Pods' sandboxes
  # (the kubelet asks -998 for them): keep every container's at least containerd's own.
  restrict_oom_score_adj = $(restrict_oom)
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$node/runc"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$c/certs.d"
EOF
  if [[ -n $registry ]]; then
    mkdir -p "$c/certs.d/$registry"
    cat >"$c/certs.d/$registry/hosts.toml" <<EOF
server = "http://$registry"
[host."http://$registry"]
  capabilities = ["pull", "resolve"]
EOF
  fi
}

start_containerd() {
  local node=$1 i
  spawn "$node/containerd.pid" "$node/containerd.log" containerd --config "$node/containerd/config.toml"
  for ((i = 0; i < 300; i++)); do
    pid_alive "$node/containerd.pid" "$node/" || { tail -n 20 "$node/containerd.log" >&2; die "containerd exited"; }
    ctr_in "$node" version >/dev/null 2>&1 && break
    sleep 0.1
  done
  ctr_in "$node" version >/dev/null 2>&1 || die "containerd does not answer on $node/containerd/containerd.sock"
  ctr_in "$node" -n k8s.io images import "$(pause_archive)" >/dev/null \
    || die "importing the sandbox image failed"
}

ctr_in() { ctr --address "$1/containerd/containerd.sock" "${@:2}"; }

write_kubelet_config() {
  local dir=$1 node=$1/node port=$2 healthz=$3 cgroup=$4
  mkdir -p "$node/kubelet" "$node/pod-logs" "$node/pki"
  issue_cert "$dir/pki/cluster-ca" "$node/pki/kubelet" "/CN=system:node:$NODE_NAME" "IP:$NODE_IP"
  cat >"$node/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz
tlsCertFile: $node/pki/kubelet.crt
tlsPrivateKeyFile: $node/pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $dir/pki/cluster-ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$node/containerd/containerd.sock
# cgroup v1 (this machine's), which kubelets refuse since 1.35 unless told; cgroupfs, since
# there is no systemd.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $cgroup
failSwapOn: false
# The kubelet's own oom_score_adj; its default -999 needs CAP_SYS_RESOURCE (see containerd's
# restrict_oom_score_adj).
oomScoreAdj: $(if may_lower_oom_score; then echo -999; else echo 0; fi)
podLogsDirectory: $node/pod-logs
serializeImagePulls: false
maxPods: 30
# A shared build machine whose disk may be nearly full (CI's has been): never taint the node
# for disk pressure nor collect images, as kind's nodes (evict on memory exhaustion only).
evictionHard: {memory.available: 100Mi, nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%"}
imageGCHighThresholdPercent: 100
EOF
}

wait_node_ready() {
  local dir=$1 deadline=$((SECONDS + READY_TIMEOUT)) name
  while ((SECONDS < deadline)); do
    for name in kubelet kube-controller-manager kube-scheduler containerd; do
      pid_alive "$dir/node/$name.pid" "$dir/" || { tail -n 30 "$dir/node/$name.log" >&2; die "$name exited"; }
    done
    [[ $(kubectl_in "$dir" get node "$NODE_NAME" \
      -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]] \
      && kubectl_in "$dir" get serviceaccount default >/dev/null 2>&1 && return 0
    sleep 1
  done
  tail -n 30 "$dir/node/kubelet.log" >&2
  die "node $NODE_NAME not Ready within ${READY_TIMEOUT}s"
}

cmd_start() {
  local registry="" dir node bin api_port registry_port="" ports t0=$SECONDS
  if [[ ${1:-} == --registry ]]; then registry=${2:?--registry needs HOST:PORT}; shift 2; fi
  [[ $# == 1 ]] || { usage >&2; exit 2; }
  [[ -z $registry || $registry == 127.0.0.1:* ]] || die "--registry must be on 127.0.0.1 (got $registry)"
  [[ $(id -u) == 0 ]] || die "a kubelet, containerd and the Pods' network need root"
  cmd_provision
  dir=$(mkdir -p "$1" && cd "$1" && pwd -P)
  node=$dir/node
  [[ ! -d $node ]] || cmd_stop "$dir"
  mkdir -p "$node"
  # shellcheck disable=SC2064 # expand $dir now
  trap "cmd_stop '$dir'" EXIT  # never leave half a node behind
  "$CONTROL_PLANE" start --node "$NODE_NAME" "$dir" >/dev/null
  bin=$(<"$dir/bin")
  api_port=$(env_value "$dir" APISERVER_PORT)
  [[ -z $registry ]] || registry_port=${registry##*:}

  save_sysctls "$node"
  setup_network "$node" "$api_port" "$registry_port"
  write_cni_config "$node"
  write_containerd_config "$node" "$registry"
  log "starting containerd"
  start_containerd "$node"

  # The apiserver's client certificate may use the kubelet's API (logs, exec, port-forward).
  kubectl_in "$dir" create clusterrolebinding kube-apiserver-kubelet-client \
    --clusterrole=system:kubelet-api-admin --user=kube-apiserver-kubelet-client >/dev/null
  log "starting kube-controller-manager and kube-scheduler"
  spawn "$node/kube-controller-manager.pid" "$node/kube-controller-manager.log" \
    "$bin/kube-controller-manager" --kubeconfig="$dir/kubeconfig-kube-controller-manager" \
    --secure-port=0 --leader-elect=false --use-service-account-credentials=true \
    --root-ca-file="$dir/pki/ca.crt" --service-account-private-key-file="$dir/pki/sa.key" \
    --cluster-name=kube-wasm --controllers='*'
  spawn "$node/kube-scheduler.pid" "$node/kube-scheduler.log" \
    "$bin/kube-scheduler" --kubeconfig="$dir/kubeconfig-kube-scheduler" \
    --secure-port=0 --leader-elect=false

  read -r -a ports <<<"$(free_ports 2)"
  write_kubelet_config "$dir" "${ports[0]}" "${ports[1]}" "$(cgroup_root)"
  make_cgroup_root "$node" "$(cgroup_root)"
  log "starting the kubelet ($NODE_NAME, $NODE_IP:${ports[0]})"
  spawn "$node/kubelet.pid" "$node/kubelet.log" "$bin/kubelet" \
    --config="$node/kubelet.yaml" --kubeconfig="$dir/kubeconfig-kubelet" \
    --root-dir="$node/kubelet" --node-ip="$NODE_IP" --hostname-override="$NODE_NAME" --v=1
  wait_node_ready "$dir"
  trap - EXIT
  {
    printf 'NODE_IP=%s\n' "$NODE_IP"
    [[ -z $registry_port ]] || printf 'POD_REGISTRY=%s:%s\n' "$NODE_IP" "$registry_port"
    printf 'CONTAINERD_ADDRESS=%q\n' "$node/containerd/containerd.sock"
  } >>"$dir/env"
  log "node $NODE_NAME Ready in $((SECONDS - t0))s; kubeconfig: $dir/kubeconfig"
  cat "$dir/env"
}

# ---------------------------------------------------------------------------------------------
# stop
# ---------------------------------------------------------------------------------------------

# Kills every container and sandbox task containerd runs for the kubelet, and deletes them.
kill_containers() {
  local node=$1 id
  ctr_in "$node" version >/dev/null 2>&1 || return 0
  for id in $(ctr_in "$node" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr_in "$node" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for id in $(ctr_in "$node" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr_in "$node" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
  done
  for id in $(ctr_in "$node" -n k8s.io containers ls -q 2>/dev/null); do
    ctr_in "$node" -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
    # libcni's cache of the sandbox's networks (their CNI DEL never runs).
    rm -f /var/lib/cni/results/*"-$id-"*
  done
}

# containerd's runc shims outlive containerd: stopped by PID, each found by the containerd
# socket (under DIR) on its command line.
kill_shims() {
  local node=$1 proc pid cmdline
  for proc in /proc/[0-9]*; do
    pid=${proc#/proc/}
    cmdline=$(tr '\0' ' ' 2>/dev/null <"$proc/cmdline") || continue
    [[ $cmdline == *containerd-shim*"$node/containerd/containerd.sock"* ]] || continue
    kill -KILL "$pid" 2>/dev/null || true
  done
}

unmount_under() {
  local mnt
  # Deepest first; mountinfo escapes spaces as \040.
  awk -v dir="$1/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r \
    | while read -r mnt; do umount -l "$(printf '%b' "$mnt")" 2>/dev/null || true; done
}

remove_cgroups() {
  local node=$1 path i
  [[ -f $node/cgroups.created ]] || return 0
  # The kubelet's and containerd's own cgroups below the root: deepest first, a few tries
  # while killed tasks leave them.
  for ((i = 0; i < 20; i++)); do
    local left=0
    while read -r path; do
      [[ -d $path ]] || continue
      find "$path" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
      rmdir "$path" 2>/dev/null || left=1
    done < <(tac "$node/cgroups.created")
    ((left)) || break
    sleep 0.2
  done
  rm -f "$node/cgroups.created"
}

teardown_network() {
  local node=$1
  [[ -f $node/bridge ]] || return 0
  remove_network
  [[ $(cat "$OWNER_FILE" 2>/dev/null) != "${node%/node}" ]] || rm -f "$OWNER_FILE"
  rm -f "$node/bridge"
}

# Removes the bridge and the chains (whoever's they were).
remove_network() {
  iptables -w -t nat -D PREROUTING -i "$BRIDGE" -j "$NAT_CHAIN" 2>/dev/null || true
  iptables -w -t nat -F "$NAT_CHAIN" 2>/dev/null || true
  iptables -w -t nat -X "$NAT_CHAIN" 2>/dev/null || true
  iptables -w -D FORWARD -i "$BRIDGE" -j "$FORWARD_CHAIN" 2>/dev/null || true
  iptables -w -F "$FORWARD_CHAIN" 2>/dev/null || true
  iptables -w -X "$FORWARD_CHAIN" 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
}

restore_sysctls() {
  local line
  [[ -f $1/sysctl.saved ]] || return 0
  while read -r line; do sysctl -qw "$line" || true; done <"$1/sysctl.saved"
  rm -f "$1/sysctl.saved"
}

cmd_stop() {
  local dir node
  [[ -d $1 ]] || return 0
  dir=$(cd "$1" && pwd -P)
  node=$dir/node
  if [[ -d $node ]]; then
    stop_pid "$node/kubelet.pid" "$dir/" kubelet
    kill_containers "$node"
    stop_pid "$node/kube-scheduler.pid" "$dir/" kube-scheduler
    stop_pid "$node/kube-controller-manager.pid" "$dir/" kube-controller-manager
    stop_pid "$node/containerd.pid" "$dir/" containerd
    kill_shims "$node"
    unmount_under "$node"
    remove_cgroups "$node"
    teardown_network "$node"
    restore_sysctls "$node"
  fi
  "$CONTROL_PLANE" stop "$dir"
}

main() {
  trap 'exit 130' INT  # make sure EXIT traps (cleanup) run on interrupt
  trap 'exit 143' TERM
  case "${1:-}" in
    provision) cmd_provision ;;
    start) shift; cmd_start "$@" ;;
    stop) [[ $# == 2 ]] || { usage >&2; exit 2; }; cmd_stop "$2" ;;
    -h | --help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
}

main "$@"
