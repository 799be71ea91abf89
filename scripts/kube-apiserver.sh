#!/bin/sh
# Builds the kube-apiserver that internal/kubetest runs for the Kubernetes
# tests, from the Go module proxy through the tools module
# internal/kubetest/tools (k8s.io/kubernetes at one release), and prints
# the binary's path. The binary is cached under /var/cache/gpuform-test
# (GPUFORM_TEST_CACHE overrides; ~/.cache/gpuform-test without root),
# keyed on the Kubernetes release, the Go version and the tools module's
# go.mod and go.sum, so only the first run on a machine builds (about 7
# CPU-minutes, 2.3 GB of Go build cache); a warm one prints the
# path at once. Concurrent runs (CI's early background build, several
# test binaries) take one lock: one builds, the others wait for it.
# POSIX sh, like the other scripts.
set -eu
tools="$(cd "$(dirname "$0")/../internal/kubetest/tools" && pwd)"
k8s=$(sed -n 's#^[[:space:]]*k8s.io/kubernetes \(v[^ ]*\).*#\1#p' "$tools/go.mod" | head -n 1)
[ -n "$k8s" ] || { echo "kube-apiserver.sh: no k8s.io/kubernetes version in $tools/go.mod" >&2; exit 1; }
sum=$(cat "$tools/go.mod" "$tools/go.sum" | cksum | cut -d' ' -f1)
key="kube-apiserver-$k8s-$(go env GOVERSION)-$sum"
cache=${GPUFORM_TEST_CACHE:-}
if [ -z "$cache" ]; then
  if [ "$(id -u)" = 0 ]; then cache=/var/cache/gpuform-test; else cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpuform-test"; fi
fi
bin="$cache/$key/kube-apiserver"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache/$key"
exec 9>"$cache/$key.lock"
flock 9
if [ ! -x "$bin" ]; then
  echo "kube-apiserver.sh: building kube-apiserver $k8s into $bin (minutes on a cold machine)" >&2
  # -mod=readonly: the tools module's go.sum is the record of what is built.
  # No debug information (-dwarf=false for every package, -s -w for the
  # link): nobody debugs the test server, and on a fresh 2-core machine
  # it cut the cold build from 8.4 to 6.9 CPU-minutes (2026-12-02, module
  # download included); the binary is 119 MB. Optimisation stays on: the tests
  # time the server's answers against real deadlines.
  (cd "$tools" && CGO_ENABLED=0 go build -mod=readonly -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
