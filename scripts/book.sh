#!/usr/bin/env bash
# The book (docs/): built with mdBook, its links checked with lychee (offline: every link
# between pages, to an anchor, an image or a file of the built book must resolve). Its Rust
# code blocks are doc tests of the crate `kube-wasm-book` (docs/lib.rs): `cargo test` runs
# them (scripts/test.sh in its unit-test step; alone: cargo test -p kube-wasm-book).
#
#   scripts/book.sh install   # mdBook and lychee, the pinned versions below, into ~/.cargo/bin
#   scripts/book.sh build     # docs/ -> target/book (open target/book/index.html)
#   scripts/book.sh check     # install, build, check the links
#
# scripts/test.sh runs `check`. The two tools come from crates.io, built once per machine
# (cargo install --locked: the versions of their own Cargo.lock) and kept in ~/.cargo/bin.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly MDBOOK_VERSION=0.5.4
readonly LYCHEE_VERSION=0.24.2

# Installs crate $1 at version $2 (binary $3) unless `$3 --version` already says $2.
install_tool() {
  local crate=$1 version=$2 bin=$3
  shift 3
  # `mdbook --version` says "mdbook v0.5.4", `lychee --version` "lychee 0.24.2".
  if command -v "$bin" >/dev/null 2>&1 && [[ $("$bin" --version 2>/dev/null) =~ \ v?$version$ ]]; then
    return
  fi
  echo "book: installing $crate $version (cargo install, once per machine)" >&2
  # A target folder of its own, removed afterwards: nothing of the project's is rebuilt.
  # Unoptimised (opt-level 0): measured on 2 cores, mdBook and lychee together took 415 CPU
  # seconds to build instead of 1,024 at cargo install's default opt-level 3, and building and
  # checking the book then takes 2.0 s instead of 0.9 s. On a fresh machine (CI) the tools are
  # built on every run, so the build is what counts.
  local target
  target=$(mktemp -d "${TMPDIR:-/tmp}/kube-wasm-book-tools.XXXXXX")
  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_TARGET_DIR="$target" \
    cargo install --locked --quiet "$crate" --version "$version" "$@"
  rm -rf "$target"
}

install() {
  # Without `serve` and `watch` (a web server and a file watcher): `build` is all this needs.
  install_tool mdbook "$MDBOOK_VERSION" mdbook --no-default-features --features search
  # Without `email-check` (it would look mail servers up): links to files and anchors only.
  install_tool lychee "$LYCHEE_VERSION" lychee --no-default-features
}

build() {
  mdbook build docs
}

check() {
  install
  build
  # Every link of the built book that stays inside it: pages, anchors (`--include-fragments`),
  # images and files. Links out of the book (crates.io, kubernetes.io, …) are not followed
  # (`--offline`): no network here, and they are not ours to keep.
  lychee --offline --include-fragments --no-progress --root-dir "$PWD/target/book" \
    'target/book/**/*.html'
}

case ${1:-} in
  install) install ;;
  build) install && build ;;
  check) check ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
