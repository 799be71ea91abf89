# shellcheck shell=sh
# dnf_install.sh NOT_OFFERED SPEC... -- UNLOCK...
#
# One dnf transaction installing each SPEC ("name-version"). The version
# locks on each UNLOCK (the set's packages, held or not: a lock outlives
# the package it names, and those --allowerasing will remove) are lifted
# for it; the ones that were there are put back when it fails, with
# NOT_OFFERED (when not empty) as a possible cause: dnf's own error names
# the real one.
set -eu
not_offered=$1
shift
# GPUFORM_DNF_REPOS, when set (apply -bundle), is the only directory of
# repository files dnf reads for this transaction, and the bundle's
# repository the only one enabled: dnf.conf may define repositories of its
# own, and a plugin may add some, which reposdir does not remove.
if [ -n "${GPUFORM_DNF_REPOS:-}" ]; then
	dnf() { command dnf --setopt=reposdir="$GPUFORM_DNF_REPOS" --disablerepo='*' --enablerepo=gpuform-bundle "$@"; }
fi

# lift_locks SPEC... -- NAME...: lifts the version locks on the NAMEs.
lift_locks() {
	while [ "$1" != -- ]; do shift; done
	shift
	dnf -q versionlock delete "$@" >/dev/null 2>&1 || true
}

# install_specs SPEC... -- ...: dnf install of the SPECs. dnf waits for another
# dnf's lock by default (exit_on_lock=False).
install_specs() {
	after=false
	for a in "$@"; do
		shift
		if $after || [ "$a" = -- ]; then
			after=true
			continue
		fi
		set -- "$@" "$a"
	done
	dnf install -y -q --allowerasing "$@"
}

dnf makecache -q >/dev/null
locks="$R/etc/dnf/plugins/versionlock.list"
if [ -f "$locks" ]; then cp -p -- "$locks" "$locks.gpuform"; fi
lift_locks "$@"
install_specs "$@" || {
	rc=$?
	if [ -f "$locks.gpuform" ]; then mv -f -- "$locks.gpuform" "$locks"; fi
	if [ -n "$not_offered" ]; then
		printf '%s\n' "gpuform: the install failed. If the release is missing from this node's repositories: $not_offered." >&2
	fi
	exit $rc
}
rm -f -- "$locks.gpuform"
