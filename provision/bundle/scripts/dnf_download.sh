# shellcheck shell=sh
# dnf_download.sh SPEC...
#
# Downloads each "name-version" SPEC, with every dependency this node
# does not have installed, with the node's own dnf (dnf download
# --resolve: nothing is installed), into a new directory under /var/tmp,
# and writes its repository metadata there with createrepo_c. Prints
# "@dir DIR", "@uri URL" for each package's location in the node's
# repositories, "@record FILE NAME VERSION" for each package file and
# "@meta FILE" for each metadata file (relative to DIR), and "@base
# base.rpmdb.gz" when rpm exported this node's database there (rpm 4.16
# and later): bundle -check installs the closure onto it.
set -eu
set -f
d=$(mktemp -d "$R/var/tmp/gpuform-bundle.XXXXXX")
chmod 755 "$d"
printf '@dir %s\n' "$d"
command -v createrepo_c >/dev/null 2>&1 || fail "the node has no createrepo_c, which writes the bundle's dnf metadata (dnf install createrepo_c)"
dnf -q download --resolve --destdir "$d" "$@" >&2
dnf -q repoquery --location "$@" 2>/dev/null | sed 's/^/@uri /' || true
set +f
for f in "$d"/*.rpm; do
	[ -f "$f" ] || continue
	rpm -qp --qf "@record ${f##*/} %{NAME} %|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n" "$f"
done
createrepo_c --quiet "$d" >&2
for f in "$d"/repodata/*; do
	[ -f "$f" ] && printf '@meta repodata/%s\n' "${f##*/}"
done
if rpmdb --exportdb >"$d/base.rpmdb" 2>/dev/null && gzip -n "$d/base.rpmdb"; then
	printf '@base base.rpmdb.gz\n'
fi
