#!/usr/bin/env bash
# Coverage-guided fuzzing of the host's decoders and classifiers (fuzz/, the book's
# "Fuzzing"): libFuzzer (`libfuzzer-sys`) on the stable toolchain, each target a check of
# fuzz/src/checks/ that panics when an invariant breaks.
#
#   scripts/fuzz.sh                      bounded: build, then every target for FUZZ_SECS
#                                        seconds (default 20); fails on any crash, timeout or
#                                        leak (scripts/test.sh runs this)
#   scripts/fuzz.sh --long [SECS] [TARGET…]
#                                        long run: each target (default: all) for SECS
#                                        seconds (default 3600)
#
# The corpus grows in fuzz/target/corpus/<target> (kept between runs, never committed),
# seeded from fuzz/seeds/, host-shim/tests/data/request_info.cases (one seed a line) and the
# inputs that once failed, host-shim/tests/data/fuzz-regressions/<target>/, with the words of
# fuzz/dicts/<target>.dict. A failing input is written to fuzz/target/artifacts/<target>/;
# fix the bug and copy the input into host-shim/tests/data/fuzz-regressions/<target>/, where
# `cargo test` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(abi_frame import_headers manifest merge_functions request_classification watch_event)
secs=${FUZZ_SECS:-20}
if [[ ${1:-} == --long ]]; then
  shift
  secs=3600
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    secs=$1
    shift
  fi
  if (($#)); then targets=("$@"); fi
elif (($#)); then
  echo "usage: scripts/fuzz.sh [--long [SECS] [TARGET…]]" >&2
  exit 2
fi

# The instrumented build, in fuzz/target: for the host's target triple, named explicitly so
# that build scripts and proc macros are built apart, uninstrumented (fuzz/rustc-wrapper.sh).
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTC_WRAPPER="$PWD/fuzz/rustc-wrapper.sh" \
  cargo build --manifest-path fuzz/Cargo.toml --profile fuzz --target "$host" --bins
bin=fuzz/target/$host/fuzz

# request_info.cases, one seed a line: `METHOD URI` (NS the namespace under test).
cases=fuzz/target/seeds/request_classification
rm -rf "$cases" && mkdir -p "$cases"
n=0
while IFS= read -r line; do
  [[ $line == *" => "* && $line != \#* ]] || continue
  n=$((n + 1))
  printf '%s' "${line%% => *}" | sed 's/NS/team-a/g' >"$cases/case-$n"
done <host-shim/tests/data/request_info.cases

seeds_of() {
  case "$1" in
    abi_frame | import_headers) echo fuzz/seeds/frames ;;
    request_classification) echo fuzz/seeds/request_classification "$cases" ;;
    *) echo "fuzz/seeds/$1" ;;
  esac
}

# One target a core (FUZZ_JOBS, default 2) at a time; each writes fuzz/target/<target>.log.
fuzz_one() {
  local target=$1 corpus=fuzz/target/corpus/$1 artifacts=fuzz/target/artifacts/$1
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus") dir
  for dir in $(seeds_of "$target") "host-shim/tests/data/fuzz-regressions/$target"; do
    if [[ -d $dir ]]; then dirs+=("$dir"); fi
  done
  local dict=()
  if [[ -f fuzz/dicts/$target.dict ]]; then dict=(-dict="fuzz/dicts/$target.dict"); fi
  "$bin/$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "${dirs[@]}" \
    >"fuzz/target/$target.log" 2>&1
}

jobs=${FUZZ_JOBS:-2}
printf '\n==> fuzz %s for %ss each, %s at a time\n' "${targets[*]}" "$secs" "$jobs" >&2
declare -A pid_of
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$target" &
  pid_of[$target]=$!
done

failed=()
for target in "${targets[@]}"; do
  log=fuzz/target/$target.log
  if wait "${pid_of[$target]}"; then
    status=ok
  else
    status=FAILED
    failed+=("$target")
    grep -E -A40 'ERROR: libFuzzer|panicked at' "$log" | head -60 >&2 || tail -40 "$log" >&2
  fi
  # The number of runs and the last status line (coverage, features, corpus).
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  echo "fuzz $target: $status, ${runs:-?} runs; ${last:-no status line}" >&2
done

if ((${#failed[@]})); then
  echo "fuzz: crashes in ${failed[*]}; inputs under fuzz/target/artifacts/" >&2
  exit 1
fi
