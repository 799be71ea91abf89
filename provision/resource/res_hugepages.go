package resource

import (
	"fmt"
	"strconv"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// hugepagesReads declares what hugepages reads back on a node: the pending
// marker of an interrupted write (in pendingDir) and its sysctl.d drop-in.
func hugepagesReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{HugePagesFile}, ManagedDirs: []string{pendingDir}}
}

// buildHugepages reserves 2 MiB huge pages, or removes gpuform's drop-in
// when the spec asks for none. 1 GiB pages are kernel arguments instead.
func buildHugepages(in *buildInput) ([]Resource, []string, error) {
	r, err := hugepagesResource(in.n)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return nil, nil, nil
	}
	return []Resource{r}, nil, nil
}

// hugepagesResource reserves huge pages: default-size (2 MiB) pages through
// vm.nr_hugepages, live and persistent; 1 GiB pages can only be reserved
// reliably at boot, so they become kernel arguments (hugepagesBootArgs,
// which the kernel_cmdline resource adds) and this resource is not planned.
func hugepagesResource(n *spec.Node) (*fileResource, error) {
	h := n.Hugepages
	if h == nil || !h.Count.Set {
		return &fileResource{base: base{name: HugePages}, path: HugePagesFile, current: managedFile(HugePagesFile),
			attrs: func(*facts.Node, string, bool) Values { return Values{"file": StringVal(HugePagesFile)} }}, nil
	}
	size := h.Size.V.Bytes
	if size == 0 {
		size = 2 << 20
	}
	count := strconv.Itoa(h.Count.V)
	if size == 1<<30 {
		return nil, nil
	}
	if size != 2<<20 {
		return nil, fmt.Errorf("hugepages: page size %s is not one gpuform reserves (2MiB or 1GiB)", spec.FormatBytes(size))
	}
	content := header(n) + "vm.nr_hugepages = " + count + "\n"
	return &fileResource{
		base:    base{name: HugePages},
		path:    HugePagesFile,
		content: content,
		current: managedFile(HugePagesFile),
		attrs: func(f *facts.Node, _ string, _ bool) Values {
			return Values{"page_size": StringVal(spec.FormatBytes(f.HugePages.PageSizeBytes)), "count": NumberVal(f.HugePages.Total)}
		},
		desired: Values{"page_size": StringVal("2MiB"), "count": NumberVal(h.Count.V)},
		live: func(f *facts.Node) bool {
			return f.HugePages.Total == uint64(h.Count.V) && (f.HugePages.PageSizeBytes == 0 || f.HugePages.PageSizeBytes == 2<<20)
		},
		post: []Step{scriptStep("reserve huge pages", sysctlApplyScript, HugePagesFile, "always")},
	}, nil
}

// hugepagesBootArgs are the kernel arguments that reserve the spec's 1 GiB
// pages at boot; none for any other page size.
func hugepagesBootArgs(n *spec.Node) []string {
	h := n.Hugepages
	if h == nil || !h.Count.Set || h.Size.V.Bytes != 1<<30 {
		return nil
	}
	return []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=" + strconv.Itoa(h.Count.V)}
}
