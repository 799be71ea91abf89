#!/usr/bin/env bash
# Runs each fuzz target over the parsers of untrusted text for
# GPUFORM_FUZZTIME (default 60s) each, starting from the seed corpora kept
# under each package's testdata/fuzz. A crash fails the script (go test
# exits non-zero) and leaves the failing input under testdata/fuzz/FuzzX/,
# where it becomes a regression test once committed.
# Set GPUFORM_FUZZTIME=5s for a quick local run.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${GPUFORM_FUZZTIME:-60s}"
export CGO_ENABLED=1
# package target: loader, lock file (and its image pins), facts, plan file,
# nccl-tests output, nvbandwidth, ib_write_bw and fio output, a host's
# kernel log, the containerd config.toml editor and the apptainer.conf
# editor.
targets=(
  "./spec FuzzLoad"
  "./spec FuzzParseLockFile"
  "./spec FuzzParseLockFileImages"
  "./provision/facts FuzzParse"
  "./provision/plan FuzzParseFile"
  "./provision/verify/nccltest FuzzParse"
  "./provision/bench/tool FuzzParseNvbandwidth"
  "./provision/bench/tool FuzzParseIBWriteBW"
  "./provision/bench/tool FuzzParseFioJSON"
  "./provision/verify/kmsg FuzzParse"
  "./internal/tomledit FuzzApply"
  "./provision/resource FuzzSetApptainerDirectives"
)
for t in "${targets[@]}"; do
  read -r pkg fn <<<"$t"
  echo "fuzz: $fn in $pkg for $fuzztime"
  go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
done
