# shellcheck shell=sh
# lock_await.sh LOCK
#
# Waits (up to 30 s) until the lock file LOCK names this apply's holder
# ($GPUFORM_LOCK_OWNER), which proves the holder has the lock; exits
# EXIT_BUSY when it does not.
L="$R$1"
i=0
while [ "$(head -n 1 -- "$L" 2>/dev/null)" != "$GPUFORM_LOCK_OWNER" ]; do
	i=$((i + 1))
	[ "$i" -lt 600 ] || exit "$EXIT_BUSY"
	sleep 0.05
done
