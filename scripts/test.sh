#!/bin/sh
# Runs gpuform's whole test suite on a fresh machine: installs what the
# end-to-end tests need (a real OpenSSH sshd, flock, debootstrap, Slurm and munge,
# promtool, Graphviz, containerd, busybox), then `go test ./...`.
# Extra arguments go to `go test` (e.g. scripts/test.sh -run TestPlan -v).
# POSIX sh, like the node-side scripts: it runs before anything is
# installed, and is shellcheck-clean as sh.
set -eu
cd "$(dirname "$0")/.."

# need is the Debian packages to install, space-separated (package names
# have no spaces); "$@" stays go test's arguments.
need=""
want() { need="${need:+$need }$1"; }
[ -x /usr/sbin/sshd ] || want openssh-server
command -v flock >/dev/null 2>&1 || want util-linux
command -v gcc >/dev/null 2>&1 || want gcc
command -v xmllint >/dev/null 2>&1 || want libxml2-utils
# internal/debroot builds a Debian 12 root (cached under /var/cache/gpuform-test)
# for the scenarios against the real apt and dpkg.
command -v debootstrap >/dev/null 2>&1 || want debootstrap
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || want debian-archive-keyring
command -v dpkg-deb >/dev/null 2>&1 || want dpkg
command -v nsenter >/dev/null 2>&1 || want util-linux
# gpuform bundle signs its apt repositories with a key gpg makes (gpg-agent
# included: GnuPG's metapackage), and bundle -check runs apt offline.
{ command -v gpg >/dev/null 2>&1 && command -v gpg-agent >/dev/null 2>&1; } || want gnupg
command -v apt-get >/dev/null 2>&1 || want apt
# internal/slurmtest runs a real one-node Slurm (munged, slurmctld, slurmd)
# for the drain and health-check tests.
[ -x /usr/sbin/munged ] || want munge
{ [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ]; } || want slurm-wlm
# promtool judges `verify -format prometheus` and `gpuform alerts` output.
command -v promtool >/dev/null 2>&1 || want prometheus
# provision/graph and gpuform graph -format svg lay their DOT out with Graphviz.
command -v dot >/dev/null 2>&1 || want graphviz
# provision/resource hands its containerd config.toml edits to the real
# containerd's `config dump`.
command -v containerd >/dev/null 2>&1 || want containerd
# The simulated nodes' enroot and apptainer stand-ins fetch manifests from
# the tests' registry on 127.0.0.1 with curl.
command -v curl >/dev/null 2>&1 || want curl
# provision/facts runs the probe under busybox sh as well as dash and bash;
# busybox-static's sh prefers its own applets (rpm among them) to $PATH.
command -v busybox >/dev/null 2>&1 || want busybox-static
# provision/nodesh, resource and apply run their node-side scripts under dash
# too, and through shellcheck (as .ci/run does every tracked shell script).
command -v dash >/dev/null 2>&1 || want dash
command -v shellcheck >/dev/null 2>&1 || want shellcheck
# internal/kubetest runs a real Kubernetes API server: etcd from Debian's
# etcd-server, kube-apiserver built by scripts/kube-apiserver.sh, service
# account keys from openssl.
command -v etcd >/dev/null 2>&1 || want etcd-server
command -v openssl >/dev/null 2>&1 || want openssl

if [ -n "$need" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: installing $need" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
  else
    echo "scripts/test.sh: the tests need: $need" >&2
    echo "  install them with: sudo apt-get install -y $need   (or your distribution's equivalent)" >&2
    exit 1
  fi
fi

# go-nvml and its mock servers need cgo.
export CGO_ENABLED=1
# The package tests that build Debian roots on a cold machine take minutes:
# go test's 10-minute default per package is too tight for a loaded CI.
# Much of the suite's time is waiting, not computing: on sshd, a real
# slurmctld, apt in a Debian root, the simulated nodes' stand-ins. The tests
# that can share the machine call t.Parallel(); -parallel 8 lets eight of
# them run at once (go test's default is GOMAXPROCS, 2 on a 2-core CI), and
# -p 4 runs four packages' tests side by side for the same reason. Measured
# on two cores: cmd/gpuform, the suite's longest package, alone used 0.87
# of a core at -parallel 8 (420 s wall, 370 CPU seconds, every test
# passing), so it is bound by waiting, not by CPU. Verify's tier budgets
# (30s for the probe tier) are real limits: raise this only with a run
# that shows the CPU is still idle.
#
# The tests' temporary directories go on a tmpfs of their own. The suite
# creates and removes hundreds of thousands of files (every simulated node
# is a root of about 2,000; a fleet test makes dozens), and on ext4 each
# create after so many removals walks the inode bitmaps (perf: ext4's
# find_inode_bit and recently_deleted). cmd/gpuform's tests took 546 CPU
# seconds with /tmp on ext4, 313 of them in the kernel; on a tmpfs, 350
# with 115 in the kernel. GPUFORM_TEST_TMPDIR names a directory to use
# instead; without root (no mount) the suite runs in $TMPDIR as before.
tmpfs=""
cleanup() {
  if [ -n "$tmpfs" ]; then
    umount "$tmpfs" 2>/dev/null || umount -l "$tmpfs" 2>/dev/null || true
    rmdir "$tmpfs" 2>/dev/null || true
  fi
}
trap cleanup EXIT
if [ -n "${GPUFORM_TEST_TMPDIR:-}" ]; then
  export TMPDIR="$GPUFORM_TEST_TMPDIR"
elif [ "$(id -u)" = 0 ] && command -v mount >/dev/null 2>&1; then
  tmpfs=$(mktemp -d "${TMPDIR:-/tmp}/gpuform-test-tmpfs.XXXXXX")
  # A tmpfs is at most half the memory by default and holds only what is
  # written: cmd/gpuform's tests peaked at about 240 MB.
  if mount -t tmpfs -o mode=1777 gpuform-test "$tmpfs" 2>/dev/null; then
    export TMPDIR="$tmpfs"
    echo "scripts/test.sh: temporary files on a tmpfs at $tmpfs" >&2
  else
    rmdir "$tmpfs"
    tmpfs=""
  fi
fi
go test -count=1 -timeout 45m -p 4 -parallel 8 "$@" ./...
