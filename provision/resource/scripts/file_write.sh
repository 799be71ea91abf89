# shellcheck shell=sh
# file_write.sh PATH WANT EXPECT LS_MODE UID GID MODE CONTEXT MARKER BACKUP_DIR [EFFECT [ARG...]]
#
# Replaces PATH (as the node sees it) with standard input, atomically: the
# new content goes into a temporary file in the same directory, gets the
# old file's mode, owner, group and SELinux context (MODE for a new file),
# is synced, and is renamed over the old one, whose content is first
# copied under BACKUP_DIR. A symlinked file is written through: the target
# is replaced, the link stays. Content equal to the current file's is not
# written, so the step is idempotent.
#
# It refuses to write when what the plan read no longer holds: WANT is
# where PATH led, EXPECT its content's sha256 ("absent": no file), LS_MODE,
# UID and GID its mode (as ls -l shows it) and owner; MODE is the octal
# mode to give the new file and CONTEXT, when not empty, its SELinux
# context.
#
# EFFECT, when given, is the action of apply_effect (effect_lib.sh) that
# puts the new file into effect (update-grub, a service restart) and its
# ARGs, run in this step's shell. If it fails, the previous file is put
# back (or the new one removed), so a file is never left in place whose
# effect did not happen: a later plan could not see the difference and
# would not retry. MARKER says, meanwhile, that the file is written but
# not yet in effect: made before the rename and removed only once EFFECT
# succeeded, so an apply killed in between leaves it behind, the next plan
# sees it, and this step runs EFFECT again even though the file is already
# in place.
# shellcheck disable=SC2154 # _r and _e are resolve_in_root's (provision/facts/resolve.sh)
set -eu
path=$1 want=$2 expect=$3 ls_mode=$4 uid=$5 gid=$6 mode=$7 context=$8 marker=$9 backup_dir=${10}
shift 10
# "$@" is the effect from here on: nothing below sets the positional
# parameters outside a function.
if [ $# -gt 0 ]; then effect=true; else effect=false; fi

# check_mode_owner: fails when the file's mode or owner are not what the
# plan read.
check_mode_owner() {
	set -f
	# shellcheck disable=SC2046 # ls's fields on purpose
	set -- $(ls -lnd -- "$p")
	set +f
	if [ "$1" != "$ls_mode" ] || [ "$3" != "$uid" ] || [ "$4" != "$gid" ]; then
		fail "$path changed since this change was planned (mode and owner now $1 $3:$4); run gpuform plan again"
	fi
}
if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi
resolve_target "$path" "$want"
mkdir -p -- "$d"
tmp=$(mktemp "$d/.gpuform-tmp.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
trap 'exit "$EXIT_INTERRUPTED"' INT TERM HUP
cat >"$tmp"
if $effect; then
	resolve_in_root "$marker" || fail "marker: $_e"
	m=$_r
	if [ -f "$p" ] && cmp -s -- "$tmp" "$p" && [ ! -e "$m" ]; then
		exit 0
	fi
elif [ -f "$p" ] && cmp -s -- "$tmp" "$p"; then
	exit 0
fi
content_sha256 "$p"
if [ "$sha" != "$expect" ]; then
	fail "${p#"$R"} changed since this change was planned; run gpuform plan again"
fi
if [ "$expect" = absent ]; then
	chmod "$mode" "$tmp"
else
	check_mode_owner
	# The owner first: chown may clear set-id bits that chmod sets.
	chown "$uid:$gid" "$tmp"
	chmod "$mode" "$tmp"
	if [ -n "$context" ]; then chcon -- "$context" "$tmp"; fi
fi
# fsync the new content before the rename makes it visible, so a crash
# leaves the old file or the new one, never an empty one.
sync -- "$tmp" 2>/dev/null || sync
had=false
same=false
if [ -f "$p" ] && cmp -s -- "$tmp" "$p"; then
	same=true
elif [ -e "$p" ]; then
	had=true
	backup_current "$backup_dir"
fi
if $effect; then
	mkdir -p -- "${m%/*}" && : >"$m"
fi
if $same; then rm -f -- "$tmp"; else mv -f -- "$tmp" "$p"; fi
trap - EXIT
$effect || exit 0
if ! apply_effect "$@"; then
	if $same; then
		# Already in place from an interrupted run: still pending.
		fail "${p#"$R"} is in place but could not be put into effect"
	fi
	if $had; then
		cp -p -- "$b" "$d/.gpuform-restore" && mv -f -- "$d/.gpuform-restore" "$p"
	else
		rm -f -- "$p"
	fi
	rm -f -- "$m"
	fail "${p#"$R"} was not put into effect; the previous file is back in place"
fi
rm -f -- "$m"
