# gpuform package offers listing. POSIX sh; reads only, refreshes nothing.
# It lists, as "NAME VERSION" lines, every version of the packages named
# in $GPUFORM_PACKAGES that the host's package manager can install, from
# its repository lists as they are: apt-cache madison on Debian/Ubuntu
# ($GPUFORM_FAMILY debian), dnf list --showduplicates from dnf's cache on
# the RHEL family (rhel). gpuform lock runs it alone (facts.Available);
# the facts probe runs it as the function gpuform_offers when plan names
# packages (facts.Options.Packages).
set -f
case $GPUFORM_FAMILY in
debian)
	# One apt-cache for every name, which loads apt's cache once, not
	# once per package: lines "NAME | VERSION | SOURCE". The spaces are
	# dropped as tr -d ' ' would, without a fork per line: split on
	# spaces, joined with an empty IFS.
	# shellcheck disable=SC2086 # the names are split on purpose
	apt-cache madison $GPUFORM_PACKAGES 2>/dev/null | while IFS='|' read -r n v _; do
		IFS=' '
		set -- $n
		IFS=
		n=$*
		IFS=' '
		set -- $v
		IFS=
		v=$*
		unset IFS
		printf '%s %s\n' "$n" "$v"
	done
	;;
rhel)
	# shellcheck disable=SC2086 # the names are split on purpose
	dnf -q -C list --showduplicates $GPUFORM_PACKAGES 2>/dev/null |
		awk 'NF == 3 && $1 ~ /\./ { n = $1; sub(/\.[^.]*$/, "", n); print n, $2 }'
	;;
esac
# Where the versions come from, for a plan that must say why a release is
# missing: the repositories configured (a bounded excerpt), and how many
# metadata files the manager holds (none: the lists were never refreshed).
# Lines start with "@", which no package name does.
set +f
R=${GPUFORM_ROOT:-}
echo "@family $GPUFORM_FAMILY"
case $GPUFORM_FAMILY in
debian)
	for f in "$R"/etc/apt/sources.list "$R"/etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && sed -n 's/^[[:space:]]*\(deb[[:space:]].*\)$/\1/p' "$f"
	done 2>/dev/null | head -n 16 | cut -c1-200 | sed 's/^/@source /'
	for f in "$R"/etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed -n 's/^URIs:[[:space:]]*\(.*\)$/deb822 \1/p' "$f"
	done 2>/dev/null | head -n 16 | cut -c1-200 | sed 's/^/@source /'
	n=0
	for f in "$R"/var/lib/apt/lists/*_Packages*; do [ -f "$f" ] && n=$((n + 1)); done
	echo "@lists $n"
	;;
rhel)
	for f in "$R"/etc/yum.repos.d/*.repo; do
		[ -f "$f" ] && awk '/^\[/ { id = $0 } /^(baseurl|mirrorlist|metalink)[[:space:]]*=/ { print id, $0 }' "$f"
	done 2>/dev/null | head -n 16 | cut -c1-200 | sed 's/^/@source /'
	n=0
	for f in "$R"/var/cache/dnf/*/repodata; do [ -d "$f" ] && n=$((n + 1)); done
	echo "@lists $n"
	;;
esac
