# shellcheck shell=sh
# reboot.sh: restarts the host with its own reboot, found on $PATH: a
# busybox sh that prefers its applets would run busybox's reboot instead,
# which signals PID 1 the way busybox's init expects, not the node's init.
run_binary reboot
