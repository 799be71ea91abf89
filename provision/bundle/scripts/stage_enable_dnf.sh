# shellcheck shell=sh
# stage_enable_dnf.sh DIR
#
# Writes DIR/repos.d/gpuform-bundle.repo (under the root), a dnf
# repository file naming the bundle's repository in DIR, and reads its
# metadata with only that directory of repository files: apply gives it
# to its steps as GPUFORM_DNF_REPOS, which dnf_install.sh passes to dnf as
# reposdir, so the node's own repositories are not used for the
# transaction and /etc/yum.repos.d does not change. Every file's sha256
# was checked as it was copied; dnf also checks the signature of the
# repository's metadata with the bundle's key, DIR/bundle.gpg
# (repo_gpgcheck), imported into this repository's cache by makecache
# -y, and fails rather than skip a repository it cannot verify.
set -eu
dir=$1
d="$R$dir"
mkdir -p -- "$d/repos.d"
printf '[gpuform-bundle]\nname=gpuform offline bundle\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\nrepo_gpgcheck=1\ngpgkey=file://%s/bundle.gpg\nskip_if_unavailable=0\nmetadata_expire=0\n' "$dir" "$dir" >"$d/repos.d/gpuform-bundle.repo.part"
mv -f -- "$d/repos.d/gpuform-bundle.repo.part" "$d/repos.d/gpuform-bundle.repo"
# reposdir alone leaves the repositories dnf.conf defines, and those a
# plugin adds, enabled: every one but the bundle's is disabled.
if ! dnf -q -y --setopt=reposdir="$d/repos.d" --disablerepo='*' --enablerepo=gpuform-bundle makecache >&2; then
	rm -f -- "$d/repos.d/gpuform-bundle.repo"
	fail "dnf cannot read the bundle's repository in $dir"
fi
