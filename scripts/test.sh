#!/usr/bin/env bash
# Runs every test of the project on a fresh machine or a warm one:
#   format and lint checks (host and wasm32-wasip1), unit tests (native, fake host; the
#   book's Rust code blocks as doc tests), the crate docs, the example and end-to-end guests
#   built for wasm32-wasip1, a short run of every fuzz target (scripts/fuzz.sh), the book
#   (docs/, its links checked: scripts/book.sh), and the end-to-end tests:
#   wasm modules in the host shim against a real kube-apiserver + etcd started here, and the
#   host's image (scripts/image.sh) run by a one-node cluster with a kubelet (scripts/cluster.sh).
# Installs what it needs (the wasm32-wasip1 target, Debian packages, the control plane,
# cached under ~/.cache/kube-wasm after the first run).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/suites.sh
. scripts/lib/suites.sh

# Each step says when it started (minutes:seconds since this script began), the disk left
# where the run builds, and the CPU seconds the whole machine spent busy since the start (of
# nproc × the elapsed seconds), so a CI log shows where a run's time, disk and CPU went;
# each background job prints its own CPU seconds when it is awaited.
busy_cpu_seconds() {
  local _cpu user nice system rest
  read -r _cpu user nice system rest </proc/stat
  echo $(((user + nice + system) / $(getconf CLK_TCK)))
}
busy_at_start=$(busy_cpu_seconds)
step() {
  printf '\n==> [%d:%02d, %s free, machine busy %d CPU s] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) \
    "$(df -h --output=avail . | tail -n 1 | tr -d ' ')" $(($(busy_cpu_seconds) - busy_at_start)) "$*" >&2
}
# What `time` prints after a background job (`time { …; }` in its bash -c), at the end of its log.
export TIMEFORMAT='this job: %0R s wall, %0U s user + %0S s system CPU'

# CI builds a fresh clone once: incremental compilation data would never be reused there, and
# took 1.9 of the 5.6 GB target folder after the unit tests (a CI run failed on a full disk).
if [[ ${CI:-} == true ]]; then export CARGO_INCREMENTAL=0; fi

step "toolchain: wasm32-wasip1 target, rustfmt, clippy"
rustup target add wasm32-wasip1
rustup component add rustfmt clippy
# OpenSSL's headers: the API-surface list documents kube 5.0 with every feature, openssl-tls too.
if ! dpkg -s libssl-dev pkg-config >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev pkg-config
fi

# Waits for a background job started below (its process id, its log, what it does), prints its
# log and fails the run if it failed.
await_background() {
  local pid=$1 log=$2 what=$3 status=0
  wait "$pid" || status=$?
  cat "$log" >&2
  rm -f "$log"
  if ((status != 0)); then
    echo "$what failed (exit $status)" >&2
    exit 1
  fi
}

# low_priority_job COMMAND…: becomes (exec) `time COMMAND` in a session and process group of
# its own at nice 10; start it with `&`, and $! is the group to kill. setsid's new session
# is one group to the kernel's autogroup scheduling (on by default), weighed against the
# foreground's whatever its processes' nice values, so the job also sets its group's nice
# (/proc/self/autogroup, where there is one): in a cold run without that, the Go end-to-end
# tests took 406 s instead of 167 s. (Not nice 19: libFuzzer's per-input timeout counts wall
# time, and a fuzzer starved for ten seconds would report a hang.)
low_priority_job() {
  exec setsid nice -n 10 bash -c '{ echo 10 >/proc/self/autogroup; } 2>/dev/null; time "$@"' bash "$@"
}

step "control plane, node, OCI registry and the host's image: made in the background while the Rust steps run"
# kube-apiserver, kubectl and etcd are built from their Go module sources the first time
# (control-plane/; about 4 minutes on 2 idle cores, then cached); the Rust build leaves cores
# idle in its long single-crate stretches, and nothing before the end-to-end steps needs the
# control plane or the registry. Its own
# process group (setsid), so that a run ending early stops the whole provisioning; its log is
# printed when it is awaited. Then the node's parts (kube-controller-manager, kube-scheduler and
# kubelet from the same module, Debian's containerd and runc, the sandbox image; about 3
# minutes more cold) and the host's image (a release build of host-shim for
# x86_64-unknown-linux-musl in a target folder of its own, so that it never waits for the
# foreground's lock; about 8 minutes cold on 2 idle cores).
provision_log=$(mktemp "${TMPDIR:-/tmp}/kube-wasm-provision.XXXXXX")
setsid bash -c 'time { . scripts/lib/suites.sh && provision_suite_infra && prune_build_caches provision; }' \
  >"$provision_log" 2>&1 &
provision_pid=$!
background_pids=("$provision_pid")
# Ends every background job's process group (the trap on exit; with the suites' own after
# start_suite_infra).
stop_background() { kill -- "${background_pids[@]/#/-}" 2>/dev/null || true; }
trap stop_background EXIT

step "Go: the SDK, the Go example and the Go e2e guests, in the background (scripts/go.sh)"
# Building client-go for wasip1 takes minutes on a cold cache, mostly on one core while the
# Rust build below leaves it idle; its log is printed when it is awaited, before the
# end-to-end tests that run the Go programs.
go_log=$(mktemp "${TMPDIR:-/tmp}/kube-wasm-go.XXXXXX")
setsid bash -c 'time { . scripts/lib/suites.sh && scripts/go.sh && prune_build_caches go; }' \
  >"$go_log" 2>&1 &
go_pid=$!
background_pids+=("$go_pid")

step "format"
cargo fmt --all -- --check

step "build and unit tests (native, fake host)"
cargo test --workspace --exclude kube-wasm-e2e --exclude kube-wasm-parity

step "lint: host and native builds"
cargo clippy --workspace --all-targets -- -D warnings

step "crate docs: cargo doc, every rustdoc warning an error"
# The guest crates' front pages say what each replaces and link the port guide; intra-doc
# links, code blocks and HTML are checked here. (Their doc tests ran with the unit tests.)
# kube-wasm's optional features on, as docs.rs shows them: the docs link the items they gate.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --features \
  kube-wasm/unstable-runtime,kube-wasm/unstable-client,kube-wasm/kubelet-debug,kube-wasm/admission,kube-wasm/jsonpatch,kube-wasm/derive

step "build the host shim and every program natively, and the programs for wasm32-wasip1"
# Also a ported workspace of its own (shaped like kube-rs's), natively and for wasm32-wasip1.
build_suite_programs

step "lint: wasm32-wasip1 guests"
cargo clippy --target wasm32-wasip1 \
  -p kube-wasm-guest -p kube-wasm-tokio -p kube-wasm-client -p kube-runtime-wasm -p kube-wasm \
  "${SUITE_PROGRAMS[@]}" -- -D warnings

step "publishable crates: cargo package"
# The crates meant for crates.io, packaged in one invocation (path dependencies resolved
# against each other's packages). Any warning (missing metadata) fails the step. No verify
# build: it would rebuild every dependency from scratch in target/package (13 s for
# kube-wasm-abi's three alone, minutes for the rest), the sources were just built, linted and
# tested above, and crates depending on k8s-openapi only build standalone with a Kubernetes
# version chosen (K8S_OPENAPI_ENABLED_VERSION), as for kube itself.
package_log=$(cargo package --no-verify --allow-dirty -p kube-wasm-abi -p kube-wasm-guest \
  -p kube-wasm-tokio-macros -p kube-wasm-tokio -p kube-wasm-client -p kube-runtime-wasm \
  -p kube-wasm 2>&1) || { printf '%s\n' "$package_log" >&2; exit 1; }
if grep -q '^warning' <<<"$package_log"; then printf '%s\n' "$package_log" >&2; exit 1; fi

step "fuzz and the book, in the background at a low priority while the rest runs"
# Neither gates another step, and each builds in a folder of its own (fuzz/target, the book's
# tools in ~/.cargo/bin), so they wait for no lock of the foreground's. Until here the
# builds keep both cores busy; the end-to-end and parity suites leave about half of them idle
# (they mostly wait for the apiserver), which these take, at a low priority
# (low_priority_job) so that the suites go first. Fuzz: every target of fuzz/ for 20 s, failing on any crash. The book: its tools (mdBook and
# lychee, pinned versions, built once into ~/.cargo/bin), mdBook builds docs/ and lychee
# checks every link inside it; its Rust code blocks ran with the unit tests above (doc tests
# of docs/lib.rs).
fuzz_log=$(mktemp "${TMPDIR:-/tmp}/kube-wasm-fuzz.XXXXXX")
low_priority_job scripts/fuzz.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
book_log=$(mktemp "${TMPDIR:-/tmp}/kube-wasm-book.XXXXXX")
low_priority_job scripts/book.sh check >"$book_log" 2>&1 &
book_pid=$!
background_pids+=("$fuzz_pid" "$book_pid")

step "Go: wait for scripts/go.sh"
await_background "$go_pid" "$go_log" "the Go steps"

step "end to end: wait for the provisioning, start a control plane, an OCI registry and a one-node cluster"
await_background "$provision_pid" "$provision_log" \
  "provisioning the control plane, the node, the registry or the image"
start_suite_infra
trap 'stop_background; stop_suite_infra' EXIT

step "end to end: wasm modules in the host shim against the real apiserver"
run_e2e_suite

step "behavioural parity: each scenario controller, native (kube 5.0) against wasm (kube-wasm)"
run_parity_suite

step "fuzz: wait for scripts/fuzz.sh (fails on any crash)"
await_background "$fuzz_pid" "$fuzz_log" "fuzzing"

step "the book: wait for scripts/book.sh check"
await_background "$book_pid" "$book_log" "the book's build or link check"

step "done"
