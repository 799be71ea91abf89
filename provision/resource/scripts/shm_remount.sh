# shellcheck shell=sh
# shm_remount.sh SIZE: remounts /dev/shm with size=SIZE, now; fstab holds it
# for the next boot.
set -eu
run_binary mount -o "remount,size=$1" /dev/shm
