# shellcheck shell=sh
# boot_id.sh: prints the kernel's boot id (under the root), which tells one
# boot from the next; nothing when it cannot be read.
cat -- "$R/proc/sys/kernel/random/boot_id" 2>/dev/null || true
