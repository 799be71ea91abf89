# shellcheck shell=sh
# image_load.sh RUNTIME DIR NAME TAGGED PLATFORM BLOB...
#
# Loads one image of an offline bundle (apply -bundle) into RUNTIME's
# store ("containerd"; anything else is Docker) by its digest, from the
# blobs apply copied to DIR/blobs/sha256: every BLOB (a sha256 in hex)
# is hashed first, and one that is missing or whose sha256 is not its
# name refuses the load before anything is loaded. The blobs, standard
# input as index.json (one descriptor, named NAME, repo@digest, by the
# io.containerd.image.name annotation) and an oci-layout make an OCI
# archive, which the runtime's own tool loads from standard input: ctr
# images import for PLATFORM's content into containerd's k8s.io namespace,
# docker load. When
# TAGGED (repo:tag) is not empty it then points at NAME, as after a pull.
# For RUNTIME "apptainer", whose images are files, the archive is only
# made, as DIR/archives/HEX.tar (HEX: NAME's digest): the next step,
# image_file_pull.sh, builds the image file from it.
set -eu
runtime=$1 dir=$2 name=$3 tagged=$4 platform=$5
shift 5
d="$R$dir"
for b in "$@"; do
	[ -f "$d/blobs/sha256/$b" ] || fail "$dir/blobs/sha256/$b is missing: the bundle's copy did not finish; nothing was loaded"
	got=$(sha256sum <"$d/blobs/sha256/$b") || fail "sha256sum $dir/blobs/sha256/$b failed"
	got=${got%% *}
	[ "$got" = "$b" ] || fail "$dir/blobs/sha256/$b has sha256 $got: refused by its hash, nothing was loaded"
done
a="$d/load.$(uname -n).$$"
trap 'rm -rf -- "$a" "$a.tar"' EXIT
trap 'exit 1' HUP INT TERM
mkdir -p -- "$a/blobs/sha256"
for b in "$@"; do
	ln -f -- "$d/blobs/sha256/$b" "$a/blobs/sha256/$b" 2>/dev/null || cp -- "$d/blobs/sha256/$b" "$a/blobs/sha256/$b"
done
cat >"$a/index.json"
printf '{"imageLayoutVersion":"1.0.0"}\n' >"$a/oci-layout"
# containerd and Docker read the archive from a pipe: a GPU image of tens
# of GB is not written to the disk a second time. A tar cut short is a
# broken archive the runtime refuses.
archive() { (cd "$a" && tar -cf - oci-layout index.json blobs); }
case $runtime in
apptainer)
	mkdir -p -- "$d/archives"
	archive >"$a.tar"
	mv -f -- "$a.tar" "$d/archives/${name##*@sha256:}.tar"
	;;
containerd)
	archive | ctr -n k8s.io images import --platform "$platform" -
	if [ -n "$tagged" ]; then ctr -n k8s.io images tag --force "$name" "$tagged"; fi
	;;
*)
	archive | docker load
	# Docker's containerd image store keeps the name the archive gives;
	# its classic store keeps no digest, and a pull by it would follow.
	docker image inspect "$name" >/dev/null 2>&1 ||
		fail "docker load kept no image named $name: Docker's classic image store records no digest for a loaded image; enable its containerd image store (\"features\": {\"containerd-snapshotter\": true} in daemon.json), or use runtime = \"containerd\""
	if [ -n "$tagged" ]; then docker tag "$name" "$tagged"; fi
	;;
esac
