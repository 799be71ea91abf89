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

# go test -list prints each matching name, then "ok  <import path> <time>";
# it runs no test. A package that does not build fails the script here.
targets=()
for pkg in "${pkgs[@]}"; do
  listed=$(go test -list '^Fuzz' "$pkg")
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
  if go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
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
