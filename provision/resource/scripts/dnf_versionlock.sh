# shellcheck shell=sh
# dnf_versionlock.sh NAME...: locks each NAME at its installed version.
set -eu
dnf -q versionlock add "$@"
