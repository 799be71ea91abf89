# shellcheck shell=sh
# dnf_versionlock.sh NAME...: locks each NAME at its installed version.
#
# GPUFORM_DNF_REPOS, when set (apply -bundle), is the only directory of
# repository files dnf reads, and the bundle's repository the only one
# enabled, as for dnf_install.sh: versionlock reads the repositories'
# metadata too, and the node's own are not to be used (nor reachable).
set -eu
if [ -n "${GPUFORM_DNF_REPOS:-}" ]; then
	dnf() { command dnf --setopt=reposdir="$GPUFORM_DNF_REPOS" --disablerepo='*' --enablerepo=gpuform-bundle "$@"; }
fi
dnf -q versionlock add "$@"
