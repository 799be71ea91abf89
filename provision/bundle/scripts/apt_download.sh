# shellcheck shell=sh
# apt_download.sh SPEC...
#
# Downloads each "name=version" SPEC, with every dependency this node
# does not have installed, with the node's own apt in download-only mode
# (nothing is installed, the node's package lists are not refreshed),
# into a new directory under /var/tmp. Prints "@dir DIR", then for each
# package apt would fetch "@uri URI FILE", then for each file downloaded
# "@record FILE NAME VERSION" followed by apt's record of that release
# (apt-cache show) and an empty line. DIR/base.status is a copy of the
# node's dpkg status: what the packages were resolved against, which
# gpuform bundle -check installs the bundle onto.
set -eu
export DEBIAN_FRONTEND=noninteractive
set -f
d=$(mktemp -d "$R/var/tmp/gpuform-bundle.XXXXXX")
mkdir -p "$d/partial"
# apt fetches as its _apt user.
chmod 755 "$d"
printf '@dir %s\n' "$d"
opts="-o Dir::Cache::archives=$d/ --reinstall --no-install-recommends --allow-downgrades --allow-change-held-packages"
# shellcheck disable=SC2086 # opts are one word each
apt-get install -qq --print-uris $opts "$@" | sed -n "s/^'\([^']*\)' \([^ ]*\) .*/@uri \1 \2/p" >"$d/uris"
cat "$d/uris"
# shellcheck disable=SC2086 # opts are one word each
apt-get install -y -q --download-only $opts "$@" >&2
# apt uses a file: repository's packages where they are, without copying
# them into the archives: copy those.
while read -r _ uri file; do
	case $uri in file:*)
		src=$(printf '%s\n' "${uri#file:}" | sed 's/%2[bB]/+/g; s/%3[aA]/:/g; s/%7[eE]/~/g; s/%25/%/g')
		[ -f "$d/$file" ] || cp -- "$src" "$d/$file"
		;;
	esac
done <"$d/uris"
rm -f -- "$d/uris"
cp -- "$R/var/lib/dpkg/status" "$d/base.status"
set +f
for f in "$d"/*.deb; do
	[ -f "$f" ] || continue
	n=$(dpkg-deb -f "$f" Package)
	v=$(dpkg-deb -f "$f" Version)
	printf '@record %s %s %s\n' "${f##*/}" "$n" "$v"
	apt-cache show "$n=$v" | sed '/^$/q'
	echo
done
