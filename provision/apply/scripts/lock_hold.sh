# shellcheck shell=sh
# lock_hold.sh LOCK STEP_LOCK
#
# Takes the host's apply lock LOCK (under the root) without waiting and
# keeps it while standard input stays open. The first line of the lock
# file names the holder ($GPUFORM_LOCK_OWNER), for the message a second
# apply prints. Holding LOCK, it checks that no step of an apply that is
# gone still holds STEP_LOCK. Busy, it prints what holds the lock on
# standard output ("apply\tLINE" or "step\tLINE\tCOMMAND") and exits
# EXIT_BUSY. Every way the lock file can be unusable (a directory, a full
# disk, a read-only /run) ends the script at once with the shell's own
# error line, which AcquireLock reports. No "set -e": each status is its
# own.
L="$R$1" S="$R$2"
mkdir -p -- "${L%/*}" || exit "$EXIT_OS_ERROR"
exec 9>>"$L" || exit "$EXIT_OS_ERROR"
if ! flock -n 9; then
	# The holder writes its name just after it locks; give it a moment.
	sleep 0.3
	printf 'apply\t'
	head -n 1 -- "$L" 2>/dev/null
	exit "$EXIT_BUSY"
fi
exec 8>>"$S" || exit "$EXIT_OS_ERROR"
if ! flock -n 8; then
	sleep 0.3
	printf 'step\t'
	line=$(head -n 1 -- "$S" 2>/dev/null)
	printf '%s\t' "$line"
	pid=${line%%	*}
	case $pid in
	'' | *[!0-9]*) ;;
	*) ps -o args= -p "$pid" 2>/dev/null | head -n 1 | cut -c 1-200 ;;
	esac
	echo
	exit "$EXIT_BUSY"
fi
exec 8>&-
# tee, not printf >"$L": dash's printf says "I/O error" for a full disk,
# tee names the file and the errno.
printf '%s\n' "$GPUFORM_LOCK_OWNER" | tee -- "$L" >/dev/null || exit "$EXIT_OS_ERROR"
cat >/dev/null
: >"$L"
