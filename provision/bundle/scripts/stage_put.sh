# shellcheck shell=sh
# stage_put.sh DIR FILE SHA256
#
# Writes standard input to DIR/FILE (under the root) through FILE.part,
# and renames it into place only when its sha256 is SHA256: a copy cut
# short (a full disk, a dropped connection) or altered on the way is
# removed and fails.
set -eu
d="$R$1" f=$2 want=$3
tmp="$d/$f.part"
mkdir -p -- "${tmp%/*}"
if ! cat >"$tmp"; then
	rm -f -- "$tmp"
	fail "writing $1/$f failed (is the disk full?)"
fi
got=$(sha256sum -- "$tmp" | { read -r sum _; printf '%s' "$sum"; })
if [ "$got" != "$want" ]; then
	rm -f -- "$tmp"
	fail "$1/$f has sha256 $got after the copy, the bundle's manifest says $want"
fi
mv -f -- "$tmp" "$d/$f"
