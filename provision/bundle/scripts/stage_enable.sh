# shellcheck shell=sh
# stage_enable.sh DIR
#
# Writes DIR/apt.conf (under the root), an apt configuration naming the
# bundle's repository in DIR as its only source (signed by DIR/bundle.gpg)
# with package lists of its own, and reads the repository's lists with it:
# apply gives it to its steps as APT_CONFIG, so the node's own sources
# are not used for the transaction, and nothing of the node's apt
# configuration changes. The lists are read from the local files only.
set -eu
dir=$1
d="$R$dir"
mkdir -p -- "$d/lists/partial" "$d/sources.list.d"
printf 'deb [signed-by=%s/bundle.gpg] file:%s ./\n' "$dir" "$dir" >"$d/sources.list"
{
	printf 'Dir::Etc::SourceList "%s/sources.list";\n' "$dir"
	printf 'Dir::Etc::SourceParts "%s/sources.list.d";\n' "$dir"
	printf 'Dir::State::Lists "%s/lists";\n' "$dir"
} >"$d/apt.conf.part"
APT_CONFIG="$d/apt.conf.part" apt-get update -q >&2
mv -f -- "$d/apt.conf.part" "$d/apt.conf"
