# shellcheck shell=sh
# image_file_pull.sh DIR FILE LINK SHARED LEDGER DIRS_FILE RUNTIME REF
#
# Pulls one image for enroot or Apptainer (RUNTIME "enroot"; anything else
# is Apptainer), whose images are files: the runtime pulls REF by digest
# (Apptainer builds it from an OCI archive when REF is oci-archive:PATH,
# what an offline bundle's load step made, removed afterwards; enroot
# copies the file when REF is squashfs:PATH, a bundle's image file named
# SHA256.sqsh, refused unless the copy's sha256 is that name, and removed
# afterwards)
# into a temporary name in the image_dir DIR, renamed to FILE once the
# pull succeeded (so a file under that name is always a finished pull);
# LINK, the tag's symlink when not empty, then moves to it, so a job that
# names the tag's path runs the pinned build. A file already there that
# gpuform pulled is not pulled again. Paths are resolved inside the root
# by facts' resolve.sh (resolve_in_root), which the step is sent with.
#
# LEDGER records the files gpuform pulled on this node: a file under the
# digest's name is adopted only when it is one of them, unchanged; any
# other is pulled again over it, since its name proves nothing about its
# content. The ledger records the file's sha256 too, hashed after the pull,
# for verify -tier full to hash again; an entry an older gpuform wrote
# without one is pulled again. SHARED "true" says DIR is shared storage
# that other nodes pull into: a file is adopted by its name, and DIR's
# owner and mode are not judged. DIR is recorded in DIRS_FILE last: the
# probe lists the image files of the directories recorded there.
# shellcheck disable=SC2154 # _r and _e are resolve_in_root's (provision/facts/resolve.sh)
set -eu
d=$1 f=$2 l=$3 shared=$4 ledger=$5 dirs_file=$6 runtime=$7 ref=$8
# Temporary names are the host's own: image_dir may be shared storage that
# every node of a cluster pulls into at once. An interrupted pull (the
# step's time limit) removes its partial file.
u=$(uname -n).$$.gpuform-tmp
tmp=.$f.$u
resolve_in_root "$d" || { echo "image_dir $d: $_e" >&2; exit 1; }
D=$_r
mkdir -p "$D"
# Plan refuses a regular file at the link's name where the probe saw it;
# the step refuses anything but a link there too, before it pulls (a
# directory gpuform has not recorded yet is not probed), since mv -f
# would replace it.
if [ -n "$l" ] && [ -e "$D/$l" ] && [ ! -h "$D/$l" ]; then
	echo "$d/$l is not the tag's link gpuform makes (a file or directory of someone else's); gpuform replaces nothing it did not write: move it away, then apply again" >&2
	exit 1
fi
resolve_in_root "$ledger" || { echo "$ledger: $_e" >&2; exit 1; }
L=$_r
ident() { stat -c '%d:%i %s %Y' "$1"; }
# An image_dir (D, shown as d) that users other than root, or the user
# the step runs as, may write to, or that lies under a directory they may
# rename or replace it in (group or world writable without the sticky
# bit), is refused: any of them could put a file under a digest's name,
# or a link under a tag's, before gpuform looks. Plan judges the same on
# what the probe saw (judgeImageDir).
if ! $shared; then
	me=$(id -u)
	p=$D
	while :; do
		o=$(stat -c %u "$p") || exit 1
		if [ "$o" != 0 ] && [ "$o" != "$me" ]; then
			echo "image_dir $d: ${p#"$R"} belongs to user $o, not root: another user could plant a file under an image's name; make root its owner, or set image_dir_shared = true if it is shared storage" >&2
			exit 1
		fi
		if { [ "$p" = "$D" ] && [ -n "$(find "$p" -maxdepth 0 -perm /022)" ]; } || [ -n "$(find "$p" -maxdepth 0 -perm /022 ! -perm -1000)" ]; then
			echo "image_dir $d: ${p#"$R"} is writable by users other than its owner ($(stat -c %A "$p")): another user could plant a file under an image's name; chmod go-w it, or set image_dir_shared = true if it is shared storage" >&2
			exit 1
		fi
		if [ "$p" = "${R:-/}" ] || [ "$p" = / ]; then break; fi
		p=$(dirname "$p")
	done
fi
mine=false
if [ -f "$D/$f" ]; then
	if $shared; then
		mine=true
	elif [ -f "$L" ] && awk -v p="$d/$f" -v id="$(ident "$D/$f")" '$4 == p && $1 " " $2 " " $3 == id && length($5) == 71 && substr($5, 1, 7) == "sha256:" { ok = 1 } END { exit !ok }' "$L"; then
		mine=true
	elif [ -f "$L" ] && awk -v p="$d/$f" '$4 == p && NF == 4 { ok = 1 } END { exit !ok }' "$L"; then
		echo "$d/$f: recorded without a content hash (an older gpuform): pulling it again"
	else
		echo "$d/$f: not pulled by gpuform on this node (or changed since): pulling it again"
	fi
fi
if $mine; then
	echo "$d/$f: already on the node"
else
	trap 'rm -f "$D/$tmp"' EXIT
	trap 'exit 1' HUP INT TERM
	case $runtime in
	enroot)
		case $ref in
		squashfs:*)
			src=$R${ref#squashfs:}
			[ -f "$src" ] || { echo "${ref#squashfs:} is missing: the bundle's copy did not finish; nothing was installed" >&2; exit 1; }
			cp -- "$src" "$D/$tmp"
			;;
		*) enroot import --output "${D#"$R"}/$tmp" "$ref" ;;
		esac
		;;
	*)
		case $ref in
		oci-archive:*) apptainer build "${D#"$R"}/$tmp" "$ref" ;;
		*) apptainer pull "${D#"$R"}/$tmp" "$ref" ;;
		esac
		;;
	esac
	h=$(sha256sum <"$D/$tmp") || { echo "$d/$tmp: sha256sum failed" >&2; exit 1; }
	h=${h%% *}
	# A bundle's image file is named by its sha256: a copy that is not
	# that file is refused before it is moved in.
	case $ref in
	squashfs:*)
		want=${ref##*/}
		want=${want%.sqsh}
		if [ "$h" != "$want" ]; then
			echo "${ref#squashfs:} has sha256 $h, not the $want it is named by: refused by its hash, nothing was installed" >&2
			exit 1
		fi
		;;
	esac
	mv -f "$D/$tmp" "$D/$f"
	mkdir -p "${L%/*}"
	{ [ -f "$L" ] && awk -v p="$d/$f" '$4 != p' "$L"; echo "$(ident "$D/$f") $d/$f sha256:$h"; } >"$L.$u"
	mv -f "$L.$u" "$L"
fi
if [ -n "$l" ]; then
	ln -sf "$f" "$D/.$l.$u"
	mv -f "$D/.$l.$u" "$D/$l"
	echo "$d/$l -> $f"
fi
# An archive an offline bundle's load step made (image_load.sh), or the
# bundle's enroot image file apply copied, has served its turn.
case $ref in
oci-archive:*) rm -f -- "$R${ref#oci-archive:}" ;;
squashfs:*) rm -f -- "$R${ref#squashfs:}" ;;
esac
resolve_in_root "$dirs_file" || { echo "$dirs_file: $_e" >&2; exit 1; }
if ! grep -qxF "$d" "$_r" 2>/dev/null; then
	mkdir -p "${_r%/*}"
	printf '%s\n' "$d" >>"$_r"
fi
