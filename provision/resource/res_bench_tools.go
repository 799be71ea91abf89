package resource

import (
	"fmt"

	"github.com/gpuform/gpuform/provision/facts"
)

// benchToolPackages are the packages that provide each tool of bench {
// tools }, per family; a family without an entry has no package.
//   - perftest (ib_write_bw): the distribution's "perftest" on Debian,
//     Ubuntu (universe) and RHEL (AppStream), as MLNX_OFED/DOCA name it too.
//   - fio: "fio" in Debian, Ubuntu and RHEL AppStream.
//   - nvbandwidth: "nvbandwidth" from Debian's NVIDIA team (Ubuntu
//     multiverse, 0.9+ds-2, https://packages.ubuntu.com/source/stonking/nvbandwidth),
//     only in the releases whose archive carries it; no RHEL package is
//     known, nor one in NVIDIA's CUDA repositories.
var benchToolPackages = map[string]map[string]string{
	"perftest":    {FamilyDebian: "perftest", FamilyRHEL: "perftest"},
	"fio":         {FamilyDebian: "fio", FamilyRHEL: "fio"},
	"nvbandwidth": {FamilyDebian: "nvbandwidth"},
}

// benchToolsReads declares what bench_tools reads back on a node: nothing
// beyond the node facts every resource shares (packages, devices).
func benchToolsReads() facts.Reads { return facts.Reads{} }

// buildBenchTools installs the measurement tools bench { tools } names, so
// that `gpuform bench` measures the layers they serve. They are the
// distribution's packages at its current release, neither pinned nor held:
// the lock file records only the versioned components of a spec, a
// measurement tool is coupled to no driver or CUDA release, and a hold
// would keep the distribution's fixes from it.
func buildBenchTools(in *buildInput) ([]Resource, []string, error) {
	n := in.n
	if n.Bench == nil || len(n.Bench.Tools) == 0 {
		return nil, nil, nil
	}
	var names, warnings []string
	for _, t := range n.Bench.Tools {
		pkg, ok := benchToolPackages[t.V][in.family]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("bench tool %s not installed: no package of it is known for %s; build it from https://github.com/NVIDIA/%s and put it on the node's PATH", t.V, osName(in.f), t.V))
			continue
		}
		names = append(names, pkg)
	}
	if len(names) == 0 {
		return nil, warnings, nil
	}
	return []Resource{&benchTools{pkgResource{base: base{name: BenchTools}, family: in.family,
		set: pkgSet{names: names, pins: map[string]string{}}}}}, warnings, nil
}

// benchTools is a package set without a wanted version: the plan shows
// the packages with the releases installed ("packages"), and no version
// to move to; the first package's own "package" and "version" would only
// repeat part of that.
type benchTools struct{ pkgResource }

func (r *benchTools) Diff(n *facts.Node) (Change, error) {
	c, err := r.pkgResource.Diff(n)
	if err != nil {
		return c, err
	}
	for _, m := range []Values{c.Before, c.After} {
		if m == nil {
			continue
		}
		delete(m, "version")
		if _, ok := m["packages"]; ok {
			delete(m, "package")
		}
	}
	return c, nil
}
