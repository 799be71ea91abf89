# shellcheck shell=sh
# enroot_import.sh URI
#
# Has this host's own enroot import URI (docker://REGISTRY#IMAGE:DIGEST,
# what container_images pulls) into a new directory under /var/tmp, as
# the image file an enroot node of the spec would pull. Prints
# "@dir DIR", then "@file FILE SHA256 SIZE" for the image file, which
# gpuform bundle copies back and removes (cleanup.sh). A host without
# enroot is refused: gpuform builds no squashfs itself.
set -eu
command -v enroot >/dev/null 2>&1 ||
	fail "enroot is not installed on this host, so it cannot make the image file an enroot node imports; install enroot here (or bundle on a host of the node block that runs it), then bundle again"
mkdir -p "$R/var/tmp"
d=$(mktemp -d "$R/var/tmp/gpuform-bundle.XXXXXX")
printf '@dir %s\n' "$d"
enroot import --output "${d#"$R"}/image.sqsh" "$1" >&2
[ -f "$d/image.sqsh" ] || fail "enroot import wrote no image file"
sum=$(sha256sum <"$d/image.sqsh") || fail "sha256sum $d/image.sqsh failed"
printf '@file %s %s %s\n' "$d/image.sqsh" "${sum%% *}" "$(stat -c %s "$d/image.sqsh")"
