# shellcheck shell=sh
# stage_enable.sh DIR
#
# Writes DIR/apt.conf (under the root), an apt configuration naming the
# bundle's repository in DIR as its only source (signed by DIR/bundle.gpg)
# with package lists and binary caches of its own, and reads the
# repository's lists with it: apply gives it to its steps as APT_CONFIG, so the node's own sources
# are not used for the transaction, and nothing of the node's apt
# configuration changes. The lists are read from the local files only.
#
# apt reads APT_CONFIG first, then /etc/apt/apt.conf.d, whose settings win,
# then its main file: so APT_CONFIG names DIR/apt.main.conf as the main
# file, which includes the node's /etc/apt/apt.conf (when there is one) and
# then sets the sources again. The node's other settings (dpkg options,
# hooks) still apply; no setting of it names another source.
set -eu
dir=$1
d="$R$dir"
mkdir -p -- "$d/lists/partial" "$d/sources.list.d"
printf 'deb [signed-by=%s/bundle.gpg] file:%s ./\n' "$dir" "$dir" >"$d/sources.list"
sources() {
	printf 'Dir::Etc::SourceList "%s/sources.list";\n' "$dir"
	printf 'Dir::Etc::SourceParts "%s/sources.list.d";\n' "$dir"
	printf 'Dir::State::Lists "%s/lists";\n' "$dir"
	printf 'Dir::Cache::pkgcache "%s/pkgcache.bin";\n' "$dir"
	printf 'Dir::Cache::srcpkgcache "%s/srcpkgcache.bin";\n' "$dir"
}
{
	if [ -f "$R/etc/apt/apt.conf" ]; then
		printf '#include "/etc/apt/apt.conf";\n'
	fi
	sources
} >"$d/apt.main.conf"
{
	printf 'Dir::Etc::Main "%s/apt.main.conf";\n' "$dir"
	sources
} >"$d/apt.conf.part"
APT_CONFIG="$d/apt.conf.part" apt-get update -q >&2
mv -f -- "$d/apt.conf.part" "$d/apt.conf"
