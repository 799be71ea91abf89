# shellcheck shell=sh
# xid_lines.sh: prints the kernel ring buffer's NVIDIA Xid and SXid lines,
# with absolute times where dmesg can (util-linux's --time-format iso),
# else as it can, so a busy log does not cross the wire. Without dmesg it
# exits EXIT_NOT_FOUND; when dmesg cannot read the log, 3 with dmesg's
# words on standard error. dmesg is run by its path (run_binary): busybox's
# applet of the name knows no --time-format.
PATH="${PATH:+$PATH:}/usr/bin:/bin:/usr/sbin:/sbin"
export LC_ALL=C
binary_path dmesg || {
	echo "dmesg is not installed" >&2
	exit "$EXIT_NOT_FOUND"
}
out=$(run_binary dmesg --time-format iso 2>/dev/null) || out=$(run_binary dmesg 2>&1) || {
	printf '%s\n' "$out" >&2
	exit 3
}
printf '%s\n' "$out" | grep -E 'NVRM: Xid|SXid \(' || true
