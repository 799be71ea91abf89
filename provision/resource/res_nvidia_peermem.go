package resource

import (
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// nvidiaPeermemReads declares what nvidia_peermem reads back on a node: the
// pending marker of an interrupted write (in pendingDir) and its
// modules-load.d file.
func nvidiaPeermemReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{ModulesLoadFile}, ManagedDirs: []string{pendingDir}}
}

// buildNvidiaPeermem loads nvidia-peermem when the driver block asks for
// it, and removes gpuform's modules-load.d file when it no longer does.
func buildNvidiaPeermem(in *buildInput) ([]Resource, []string, error) {
	if !in.driverWanted() {
		return nil, nil, nil
	}
	if !in.n.Driver.Peermem.V {
		return []Resource{absentFile(NvidiaPeermem, ModulesLoadFile)}, nil, nil
	}
	r, err := peermem(in.afterReboot, header(in.n))
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// peermem loads nvidia-peermem now and at every boot (modules-load.d), for
// GPUDirect RDMA. /proc/modules spells it nvidia_peermem.
func peermem(afterReboot func(*facts.Node) bool, header string) (*fileResource, error) {
	const module = "nvidia_peermem"
	if err := check(modulePattern, "module name", module); err != nil {
		return nil, err
	}
	return &fileResource{
		base:    base{name: NvidiaPeermem, deps: []string{DriverPackage}},
		path:    ModulesLoadFile,
		content: header + module + "\n",
		current: managedFile(ModulesLoadFile),
		attrs: func(n *facts.Node, content string, exists bool) Values {
			return Values{"loaded": BoolVal(n.HasModule(module)), "load_at_boot": BoolVal(exists && strings.Contains(content, module))}
		},
		desired:     Values{"loaded": BoolVal(true), "load_at_boot": BoolVal(true)},
		live:        func(n *facts.Node) bool { return n.HasModule(module) },
		post:        []Step{scriptStep("load "+module, moduleLoadScript, module)},
		afterReboot: afterReboot,
	}, nil
}
