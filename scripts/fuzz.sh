#!/usr/bin/env bash
# Runs every fuzz target of the repository for GPUFORM_FUZZTIME (default
# 60s) each, starting from the seed corpora kept under each package's
# testdata/fuzz. A crash fails the script (go test exits non-zero) and leaves
# the failing input under testdata/fuzz/FuzzX/, where it becomes a regression
# test once committed.
#
# The list of targets is not kept here: it is what `go test -list '^Fuzz'`
# reports for the packages whose tests declare a Fuzz function, so a new
# target is run the day it is written.
#
#   scripts/fuzz.sh                 every target
#   scripts/fuzz.sh -list           print "package target" lines, run nothing
#   scripts/fuzz.sh ./spec ./lint   only the targets of these packages
#
# Set GPUFORM_FUZZTIME=5s for a quick local run.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${GPUFORM_FUZZTIME:-60s}"
export CGO_ENABLED=1

list_only=false
if [[ "${1:-}" == "-list" ]]; then
  list_only=true
  shift
fi

# Packages to look in: the arguments, or every directory with a _test.go
# file that declares a fuzz function (a cheap filter, so that go test -list
# compiles only the packages fuzzing would compile anyway).
if (($# > 0)); then
  pkgs=("$@")
else
  mapfile -t pkgs < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u | sed 's#^#./#')
fi
if ((${#pkgs[@]} == 0)); then
  echo "fuzz: no package declares a fuzz target" >&2
  exit 1
fi

# Each package's test binary is built once, instrumented for fuzzing as
# go test -fuzz builds it, and serves both for listing and for every target
# of the package: go test -fuzz would load the package graph and link the
# binary again for each target. -test.list is what go test -list runs: each
# matching name, no test run. A package that does not build fails here.
# GPUFORM_FUZZ_BINDIR keeps the binaries in a directory that outlives the
# run, and a binary already there is used as it is: .ci/run builds them
# (with -list) while the suite runs, then fuzzes from them.
if [[ -n "${GPUFORM_FUZZ_BINDIR:-}" ]]; then
  bindir=$GPUFORM_FUZZ_BINDIR
  mkdir -p "$bindir"
else
  bindir=$(mktemp -d)
  trap 'rm -rf "$bindir"' EXIT
fi
cachedir="$(go env GOCACHE)/fuzz"
declare -A bin_of import_of
targets=()
for pkg in "${pkgs[@]}"; do
  bin="$bindir/$(printf '%s' "$pkg" | tr -c 'A-Za-z0-9_.-' '_').test"
  if [[ ! -x "$bin" ]]; then
    go test -c -fuzz '^Fuzz' -o "$bin.tmp" "$pkg"
    mv "$bin.tmp" "$bin"
  fi
  bin_of[$pkg]=$bin
  import_of[$pkg]=$(go list -f '{{.ImportPath}}' "$pkg")
  listed=$(cd "$pkg" && "$bin" -test.list '^Fuzz')
  while read -r name; do
    if [[ "$name" =~ ^Fuzz[A-Za-z0-9_]*$ ]]; then
      targets+=("$pkg $name")
    fi
  done <<<"$listed"
done
if ((${#targets[@]} == 0)); then
  echo "fuzz: go test -list found no fuzz target in ${pkgs[*]}" >&2
  exit 1
fi

if $list_only; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi
echo "fuzz: ${#targets[@]} targets, $fuzztime each"
# Go 1.26's fuzzing coordinator can fail a target that found nothing with
# a bare "context deadline exceeded" as -fuzztime runs out on a loaded
# machine (golang/go#75804, fixed in Go 1.27). That one failure, with no
# failing input written under testdata/fuzz/FuzzX/, is reported and
# counted, not failed; any other failure, or any new input, fails the run.
raced=0
for t in "${targets[@]}"; do
  read -r pkg fn <<<"$t"
  echo "fuzz: $fn in $pkg for $fuzztime"
  corpus="$pkg/testdata/fuzz/$fn"
  # shellcheck disable=SC2012 # the corpus's names are go test's hex hashes
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  log=$(mktemp)
  # The flags go test -fuzz passes: its corpus cache under GOCACHE (per
  # import path, as go test keeps it), its 10-minute timeout, and
  # -test.paniconexit0. The binary runs in the package's directory, as
  # under go test, so a failing input lands in $pkg/testdata/fuzz/$fn.
  if (cd "$pkg" && "${bin_of[$pkg]}" -test.paniconexit0 -test.timeout=10m -test.run '^$' \
    -test.fuzz "^${fn}\$" -test.fuzztime "$fuzztime" -test.fuzzcachedir "$cachedir/${import_of[$pkg]}") 2>&1 | tee "$log"; then
    rm -f "$log"
    continue
  fi
  # shellcheck disable=SC2012 # as above
  after=$(ls "$corpus" 2>/dev/null | sort || true)
  reasons=$(grep -v -e '^fuzz: ' -e '^--- FAIL: ' -e '^FAIL' -e '^exit status ' -e '^ok ' -e '^warning: starting with empty corpus' "$log" | sed 's/^[[:space:]]*//' | sort -u)
  rm -f "$log"
  if [[ "$before" == "$after" && "$reasons" == "context deadline exceeded" ]]; then
    echo "fuzz: $fn: Go's coordinator stopped with \"context deadline exceeded\" and wrote no failing input (golang/go#75804); not a crash"
    raced=$((raced + 1))
    continue
  fi
  exit 1
done
echo "fuzz: ${#targets[@]} targets, no crash ($raced stopped by golang/go#75804)"
