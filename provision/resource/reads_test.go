package resource

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// readSpecs are the specs TestDeclaredReads plans: every example, the
// plan goldens' spec, spec's full spec and testdata/reads, which between
// them ask for every resource type and every file one may read.
var readSpecs = []string{
	"../../examples/quickstart",
	"../../examples/training-cluster",
	"../../examples/inference-pcie",
	"../../examples/slurm-enroot",
	"../../examples/ci-preflight",
	"../plan/testdata",
	"../../spec/testdata/full",
	"testdata/reads",
}

// readProfiles are the simulated profiles TestDeclaredReads plans on: a
// converged node, one with stale versions and gpuform's own files, a RHEL
// family one, one without a driver and a GB200 tray (IMEX). Probing every profile costs half a
// minute and reaches no file these do not.
var readProfiles = []string{"hgx-h100-converged", "hgx-h100-stale", "l40s-rocky9", "no-driver", "gb200-nvl72-tray"}

// probeProfiles probes readProfiles with the resources' declared reads.
func probeProfiles(t *testing.T) map[string]*facts.Node {
	t.Helper()
	state := t.TempDir()
	out := map[string]*facts.Node{}
	for _, name := range readProfiles {
		root, err := sim.Materialize(name, state)
		if err != nil {
			t.Fatal(err)
		}
		n, err := facts.Probe(context.Background(), sim.New("sim://"+name, root), facts.Options{Reads: Reads()})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// declares reports whether r names path as a file to read back in full
// (config) or, for a managed file, also by its directory.
func declaresManaged(r facts.Reads, path string) bool {
	if slices.Contains(r.ManagedFiles, path) {
		return true
	}
	dir, base := filepath.Split(path)
	dir = strings.TrimSuffix(dir, "/")
	return slices.Contains(r.ManagedDirs, dir) && (dir == "/etc/gpuform" || strings.Contains(base, "gpuform"))
}

// TestDeclaredReads plans every spec against every simulated profile, one
// resource type at a time, with facts that record what each type's build
// and Diff ask for, and fails when a type reads a config file, managed
// file or unit its Reads does not declare, and when a type declares one
// it never reads (a stale declaration the probe would read for nothing).
func TestDeclaredReads(t *testing.T) {
	profiles := probeProfiles(t)
	// One node with every declared unit enabled and running, for the
	// reads a resource makes only where a service runs (a restart).
	running := *profiles["hgx-h100-converged"]
	running.Units = map[string]facts.UnitState{}
	for _, u := range Reads().Units {
		running.Units[u] = facts.UnitState{Enabled: "enabled", Active: "active"}
	}
	profiles["hgx-h100-converged+running"] = &running
	used := map[string]*facts.ReadLog{}
	for _, dir := range readSpecs {
		cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", dir, diags.Error())
		}
		for _, n := range cfg.Nodes {
			for _, name := range slices.Sorted(maps.Keys(profiles)) {
				f := profiles[name]
				for _, b := range builders() {
					log := used[b.name]
					if log == nil {
						log = &facts.ReadLog{}
						used[b.name] = log
					}
					rec := f.Recording(log)
					in := newBuildInput(testKB, n, f)
					in.f = rec
					rs, _, err := b.build(in)
					if err != nil {
						continue // a spec this profile cannot take: nothing read counts
					}
					for _, r := range rs {
						if _, err := r.Diff(rec); err != nil {
							continue
						}
						// What a package set reads after its install
						// to decide a restart is a read too.
						if p, ok := r.(*pkgResource); ok && p.restartIf != nil {
							p.restartIf(rec)
						}
					}
				}
			}
		}
	}
	for _, b := range builders() {
		decl, log := b.reads(), used[b.name]
		for _, p := range slices.Sorted(maps.Keys(log.ConfigFiles)) {
			if !slices.Contains(decl.ConfigFiles, p) && !slices.Contains(decl.ManagedFiles, p) {
				t.Errorf("%s reads config file %s, which its Reads does not declare", b.name, p)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(log.ManagedFiles)) {
			if !declaresManaged(decl, p) {
				t.Errorf("%s reads managed file %s, which its Reads does not declare (as a file or by its directory)", b.name, p)
			}
		}
		for _, u := range slices.Sorted(maps.Keys(log.Units)) {
			if !slices.Contains(decl.Units, u) {
				t.Errorf("%s reads unit %s, which its Reads does not declare", b.name, u)
			}
		}
		for _, p := range decl.ConfigFiles {
			if !log.ConfigFiles[p] {
				t.Errorf("%s declares config file %s but never reads it", b.name, p)
			}
		}
		for _, p := range decl.ManagedFiles {
			if !log.ManagedFiles[p] && !log.ConfigFiles[p] {
				t.Errorf("%s declares managed file %s but never reads it", b.name, p)
			}
		}
		for _, u := range decl.Units {
			if !log.Units[u] {
				t.Errorf("%s declares unit %s but never reads it", b.name, u)
			}
		}
		for _, d := range decl.ManagedDirs {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(log.ManagedFiles)), func(p string) bool { return filepath.Dir(p) == d }) {
				t.Errorf("%s declares managed directory %s but reads no file in it", b.name, d)
			}
		}
	}
}
