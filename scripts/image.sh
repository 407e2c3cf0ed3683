#!/usr/bin/env bash
# The host shim's container image, built without a container engine: a static host-shim and
# Debian's CA certificates in one layer, assembled by umoci and pushed by skopeo. Run with
# --help for usage.
set -euo pipefail

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly CACHE_ROOT="${KUBE_WASM_CACHE:-$HOME/.cache/kube-wasm}/image"
readonly APT_LOG="$CACHE_ROOT/apt.log"
readonly TARGET=x86_64-unknown-linux-musl
# The distroless images' "nonroot" user: no account in the image, no home, no shell.
readonly USER_ID=65532
export DEBIAN_FRONTEND=noninteractive

usage() {
  cat <<EOF
Usage: ${0##*/} COMMAND [OPTIONS] ARGS

The host shim's OCI image: /usr/local/bin/host-shim (static, $TARGET: no C library in the
image) and /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates), nothing else; runs as
user $USER_ID:$USER_ID with host-shim as its entrypoint. No container engine: umoci assembles
the image in an OCI image layout, skopeo copies it to a registry (both Debian packages,
installed when missing).

Commands:
  build [--profile PROFILE] [--binary FILE] [--label KEY=VALUE]... LAYOUT
                 Build host-shim with cargo's PROFILE (default: release; host-release is the
                 whole-program-optimised build, much slower to compile) for $TARGET, then
                 make the OCI image layout LAYOUT (a folder, created if missing) hold the image
                 tagged with the workspace version. Prints LAYOUT:TAG on stdout.
                 --binary FILE: use this host-shim instead of building one (it must be
                 statically linked). --label: an extra image label (repeatable).
                 The same binary, certificates and labels give the same image digest: every
                 time in the image is the commit time of HEAD (SOURCE_DATE_EPOCH overrides).
  push [--insecure] LAYOUT[:TAG] REPOSITORY[:TAG]
                 Copy the image to a registry (plain HTTP with --insecure; credentials as
                 skopeo finds them: \${XDG_RUNTIME_DIR}/containers/auth.json, ~/.docker/config.json).
                 Prints REPOSITORY@sha256:… on stdout: the reference by digest, for deploy/.
  -h, --help     Show this help.

Example (then see deploy/README.md):
  scripts/image.sh build target/oci/host-shim
  scripts/image.sh push target/oci/host-shim registry.example.com/kube-wasm/host-shim:0.1.0

Environment:
  KUBE_WASM_CACHE    cache root for the apt log (default \$HOME/.cache/kube-wasm)
  CARGO_TARGET_DIR   cargo's target folder for the build (default: the workspace's target/)
  SOURCE_DATE_EPOCH  the time in the image (default: HEAD's commit time)
EOF
}

log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=lib/infra.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/infra.sh"
# shellcheck source=lib/oci.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/oci.sh"

workspace_version() {
  sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$REPO_ROOT/Cargo.toml"
}

# True if FILE is an ELF executable without a program interpreter (nothing loads a libc).
is_static() {
  [[ $(head -c 4 "$1" | od -An -c | tr -d ' ') == '177ELF' ]] || return 1
  ! LC_ALL=C readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter'
}

build_binary() {
  local profile=$1 dir
  rustup target list --installed 2>/dev/null | grep -qx "$TARGET" || rustup target add "$TARGET" >&2
  # ring (rustls' crypto) compiles C for the target: musl-gcc is Debian's musl-tools.
  ensure_commands musl-gcc:musl-tools
  log "building host-shim ($profile, $TARGET)"
  (cd "$REPO_ROOT" && cargo build --locked --profile "$profile" --target "$TARGET" -p host-shim >&2)
  dir=$profile
  [[ $profile == dev ]] && dir=debug
  printf '%s/%s/%s/host-shim\n' "${CARGO_TARGET_DIR:-$REPO_ROOT/target}" "$TARGET" "$dir"
}

cmd_build() {
  local profile=release binary="" layout labels=() tag epoch created rootfs revision
  while (($#)); do
    case $1 in
      --profile) profile=${2:?--profile needs a value}; shift 2 ;;
      --binary) binary=${2:?--binary needs a file}; shift 2 ;;
      --label) labels+=(--config.label "${2:?--label needs KEY=VALUE}"); shift 2 ;;
      -*) usage >&2; exit 2 ;;
      *) break ;;
    esac
  done
  [[ $# == 1 ]] || { usage >&2; exit 2; }
  layout=$1
  mkdir -p "$CACHE_ROOT"
  ensure_commands readelf:binutils update-ca-certificates:ca-certificates
  ensure_oci_tools
  [[ -n $binary ]] || binary=$(build_binary "$profile")
  [[ -x $binary ]] || die "no executable $binary"
  is_static "$binary" || die "$binary is not a static executable (build it for $TARGET)"
  [[ -s /etc/ssl/certs/ca-certificates.crt ]] || die "no /etc/ssl/certs/ca-certificates.crt"
  tag=$(workspace_version)
  revision=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$REPO_ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}
  created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
  rootfs=$(mktemp -d)
  # shellcheck disable=SC2064 # expand $rootfs now
  trap "rm -rf '$rootfs'" EXIT
  install -D -m 0755 "$binary" "$rootfs/usr/local/bin/host-shim"
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  chmod 0755 "$rootfs"
  log "assembling $layout:$tag (host-shim $(du -h "$binary" | cut -f1), revision $revision)"
  oci_image "$layout" "$tag" "$rootfs" "$created" \
    --config.user "$USER_ID:$USER_ID" \
    --config.entrypoint /usr/local/bin/host-shim \
    --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --config.label org.opencontainers.image.title=host-shim \
    --config.label "org.opencontainers.image.version=$tag" \
    --config.label "org.opencontainers.image.revision=$revision" \
    --config.label org.opencontainers.image.description="kube-wasm: kube-rs controllers compiled to wasm32-wasip1, run as modules of one host" \
    "${labels[@]}"
  log "built $layout:$tag, manifest $(oci_digest "$layout" "$tag")"
  printf '%s:%s\n' "$layout" "$tag"
}

cmd_push() {
  local insecure="" source layout tag
  [[ ${1:-} == --insecure ]] && { insecure=--insecure; shift; }
  [[ $# == 2 ]] || { usage >&2; exit 2; }
  source=$1
  layout=${source%:*} tag=${source##*:}
  [[ $source == *:* && -d $layout ]] || { layout=$source; tag=$(workspace_version); }
  [[ -f $layout/index.json ]] || die "$layout is not an OCI image layout (run: ${0##*/} build $layout)"
  mkdir -p "$CACHE_ROOT"
  ensure_oci_tools
  oci_push "$layout" "$tag" "$2" $insecure
}

case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  push) shift; cmd_push "$@" ;;
  -h | --help) usage ;;
  *) usage >&2; exit 2 ;;
esac
