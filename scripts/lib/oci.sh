# shellcheck shell=bash
# OCI images assembled without a container engine: a folder becomes one layer of an image in
# an OCI layout with Debian's umoci, and images are copied to registries and archives with
# Debian's skopeo. Source it after defining `log`, `die`, `CACHE_ROOT` and `APT_LOG` and
# sourcing infra.sh (image.sh, cluster.sh).

# The tools, installed from Debian's packages when missing.
ensure_oci_tools() {
  ensure_commands umoci:umoci skopeo:skopeo
}

# oci_image LAYOUT TAG ROOTFS CREATED [umoci config flags…] — makes LAYOUT (an OCI image
# layout, created if missing) hold the image TAG: one layer with the contents of the folder
# ROOTFS at /, the image config's `created` CREATED (RFC 3339) and the given config flags
# (--config.entrypoint, --config.user, --config.label, …). The layer is a ustar archive GNU tar
# writes (names sorted, owner root, every time CREATED), added verbatim (`umoci raw
# add-layer`, which compresses it): so the same ROOTFS, CREATED and flags give the same digest.
# (`umoci insert` of Debian's umoci 0.4.7 leaves the archive unterminated: the last file's
# padding and the end-of-archive blocks are missing, which GNU tar refuses.)
oci_image() {
  local layout=$1 tag=$2 rootfs=$3 created=$4 layer
  shift 4
  [[ -f $layout/index.json ]] || umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci config --image "$layout:$tag" --no-history --created "$created" \
    --os linux --architecture amd64 "$@"
  layer=$(mktemp)
  (cd "$rootfs" && find . -mindepth 1 -maxdepth 1 -printf '%P\0' | LC_ALL=C sort -z \
    | tar --null --files-from=- --sort=name --format=ustar --owner=0 --group=0 \
      --numeric-owner --mtime="$created" -cf "$layer")
  umoci raw add-layer --no-history --image "$layout:$tag" "$layer"
  rm -f "$layer"
  umoci gc --layout "$layout"
}

# The digest (sha256:…) of the manifest TAG names in LAYOUT.
oci_digest() {
  python3 - "$1/index.json" "$2" <<'PY'
import json, sys
index, tag = json.load(open(sys.argv[1])), sys.argv[2]
print(next(m["digest"] for m in index["manifests"]
           if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag))
PY
}

# oci_push LAYOUT TAG REFERENCE [--insecure] — copies the image to REFERENCE (a registry's
# repository:tag, plain HTTP with --insecure) and prints REPOSITORY@DIGEST, the reference by
# digest.
oci_push() {
  local layout=$1 tag=$2 ref=$3 tls=true digest_file digest
  [[ ${4:-} == --insecure ]] && tls=false
  digest_file=$(mktemp)
  skopeo copy --quiet --dest-tls-verify="$tls" --digestfile "$digest_file" \
    "oci:$layout:$tag" "docker://$ref" >&2 || { rm -f "$digest_file"; die "pushing $ref failed"; }
  digest=$(<"$digest_file")
  rm -f "$digest_file"
  local repository=$ref
  [[ ${ref##*/} == *:* ]] && repository=${ref%:*}  # the tag off, not a registry's port
  printf '%s@%s\n' "$repository" "$digest"
}
