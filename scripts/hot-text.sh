#!/usr/bin/env bash
# Regenerates host-shim/hot-text.order, the functions a running host executes between events,
# which the linker places together at the start of host-shim's code (host-shim/build.rs). Under
# memory pressure the kernel drops the host's clean text and maps it back 64 KiB at a time, so
# spread-out hot functions cost many such blocks; packed, they cost a few.
#
#   scripts/hot-text.sh MANIFEST...
#
# Needs: a running control plane (`KUBECONFIG` and the other variables of its `env` file set;
# the script creates the manifests' namespaces and the ring controller's CRD with `kubectl`),
# `perf`, `gcc`, `nm`, the manifests' modules, the release ring controller, and the host built as
# scripts/bench.sh builds it, alone: `cargo build --release -p host-shim` (built with other
# packages it gets their features, other code and other names). The benchmark writes manifests
# of the mixed fleet (`<out>/logs/<tag>-2/host.yaml`, `-3` suspended) and reports how much of the
# list the host it measures has.
#
# Each manifest's host runs for SETTLE_S (40) seconds, then its page faults are recorded for
# RECORD_S (30) seconds with scripts/hot-text/split-text.c preloaded, which makes every page of
# code fault on its own. The functions seen lead the new order file: the first manifest's
# hottest first, then what each next manifest adds (so list the state that should cost least
# first: a suspended fleet, whose few functions run after every code release). The others
# listed follow, under this build's names; FRESH=1 starts it anew. Rebuild and run it
# again until few are new: functions that shared a page with a hot one only show up once the
# hot ones have moved.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; }
host=${HOST_SHIM:-target/release/host-shim}
order=host-shim/hot-text.order
settle=${SETTLE_S:-40}
record=${RECORD_S:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -shared -fPIC -o "$work/split-text.so" scripts/hot-text/split-text.c
host_path=$(realpath "$host")
target/release/ring-controller crd | kubectl apply -f - >/dev/null
for namespace in $(sed -n 's/^ *namespace: *"\{0,1\}\([^" ]*\)"\{0,1\} *$/\1/p' "$@" | sort -u); do
    kubectl get namespace "$namespace" >/dev/null 2>&1 || kubectl create namespace "$namespace" >/dev/null
done
for manifest in "$@"; do
    LD_PRELOAD="$work/split-text.so" "$host" run --manifest "$manifest" \
        >"$work/host.out" 2>"$work/host.err" &
    pid=$!
    sleep "$settle"
    kill -0 "$pid" || { tail -20 "$work/host.err"; exit 1; }
    perf record -q -e page-faults -c 1 -p "$pid" -o "$work/faults.data" -- sleep "$record"
    kill -TERM "$pid"
    wait "$pid" || true
    perf script -i "$work/faults.data" -F ip,sym,dso --no-demangle 2>/dev/null |
        awk -v dso="($host_path)" '$NF == dso && $2 != "[unknown]" { print $2 }' |
        sort | uniq -c | sort -k1,1nr -k2 | awk '{ print $2 }' >>"$work/seen"
    echo "hot-text: $manifest: $(sort -u "$work/seen" | wc -l) functions so far" >&2
done
awk '!seen[$0]++' "$work/seen" >"$work/new"
if [[ ${FRESH:-0} == 1 || ! -f $order ]]; then
    cp "$work/new" "$order"
else
    # The listed functions under this build's names: a generic function's name ends in a
    # hash of its instance, which changes with the types in it (a changed future, a changed
    # dependency), and a function ThinLTO made visible across its units ends in `.llvm.`
    # and a hash of its unit, which changes with any code in that unit. A name this build
    # lacks becomes the one symbol that differs from it only in those hashes; without
    # exactly one, it is dropped.
    nm --defined-only "$host" | awk '{ print $3 }' | sort -u >"$work/symbols"
    awk -v symbols="$work/symbols" '
        function base(name) { sub(/[.]llvm[.][0-9]+$/, "", name); sub(/17h[0-9a-f]+E$/, "", name); return name }
        BEGIN { while ((getline name < symbols) > 0) { have[name] = 1; count[base(name)]++; by[base(name)] = name } }
        have[$0] { print; next }
        count[base($0)] == 1 { print by[base($0)]; carried++; next }
        { dropped++ }
        END { printf "hot-text: %d listed names carried over to this build, %d dropped\n", carried, dropped > "/dev/stderr" }
    ' "$order" >"$work/carried"
    cat "$work/new" "$work/carried" | awk '!seen[$0]++' >"$work/merged"
    echo "hot-text: $(($(wc -l <"$work/merged") - $(wc -l <"$work/carried"))) new functions" >&2
    cp "$work/merged" "$order"
fi
echo "hot-text: $(wc -l <"$order") functions in $order" >&2
