# shellcheck shell=sh
# Functions of the steps that write and remove a whole file
# (file_write.sh, file_remove.sh). They run after the prelude and facts'
# resolve.sh, whose resolve_in_root resolves a path inside the root as chroot "$R"
# would and sets _r (or _e, why not): what the probe read and what a step
# writes are the same file.
# shellcheck disable=SC2154 # _r and _e are resolve_in_root's (provision/facts/resolve.sh)
# shellcheck disable=SC2034 # p, d, sha and b are for the step that calls them

# resolve_target PATH WANT: sets p to the file PATH leads to inside the
# root (the target of any symlink on the way) and d to its directory. It
# fails when PATH now leads elsewhere than WANT, where it led when the
# plan read it, and when it is anything but a regular file.
resolve_target() {
	resolve_in_root "$1" || fail "$1: $_e"
	p=$_r
	if [ "${p#"$R"}" != "$2" ]; then
		fail "$1 now leads to ${p#"$R"}, not $2 as planned; run gpuform plan again"
	fi
	if [ -e "$p" ] && [ ! -f "$p" ]; then fail "$1 is not a regular file"; fi
	d=${p%/*}
}

# content_sha256 FILE: sets sha to the sha256 of FILE's content, or to
# "absent" when there is no FILE.
content_sha256() {
	sha=absent
	if [ -e "$1" ]; then
		sha=$(sha256sum <"$1")
		sha=${sha%% *}
	fi
}

# backup_current BACKUP_DIR: copies "$p" to a timestamped directory under
# BACKUP_DIR (resolved inside the root too), mirroring its path, and sets
# b to the copy; cp -p keeps its mode.
backup_current() {
	resolve_in_root "$1/$(date -u +%Y%m%dT%H%M%SZ)${p#"$R"}" || fail "backup: $_e"
	b=$_r
	mkdir -p -- "${b%/*}"
	cp -p -- "$p" "$b"
}
