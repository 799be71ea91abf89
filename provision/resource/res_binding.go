package resource

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
)

// bindingReads declares what binding reads back on a node: the pending
// marker of an interrupted write (in pendingDir) and the binding file.
func bindingReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{bind.File}, ManagedDirs: []string{pendingDir}}
}

// buildBinding records the node's GPU binding (each GPU's NUMA node, that
// node's CPUs as this host reports them, its NIC) in bind.File, where
// `gpuform bind` reads it when a job starts. Without numa binds or a
// gpu_nic pairing it removes the file gpuform wrote earlier.
func buildBinding(in *buildInput) ([]Resource, []string, error) {
	b, err := bind.Compute(in.n, bind.FactsCPULists(in.f))
	if err != nil {
		// The spec and this host disagree (a NUMA node it lacks): a binding
		// written anyway would bind jobs to the wrong CPUs. Verify's NUMA
		// checks say what is wrong.
		return nil, []string{fmt.Sprintf("%s not recorded: %v", bind.File, err)}, nil
	}
	if b == nil {
		return []Resource{absentFile(Binding, bind.File)}, nil, nil
	}
	// The same words whichever spec writes it, as the plain header: which
	// spec manages it is in the owner records, and a file that names no
	// spec needs no rewrite to change hands.
	b.ManagedBy = "gpuform: change the spec's numa and affinity blocks, not this file"
	return []Resource{&fileResource{
		base:    base{name: Binding},
		path:    bind.File,
		content: b.Marshal(),
		current: managedFile(bind.File),
		attrs: func(_ *facts.Node, cur string, exists bool) Values {
			if !exists {
				return Values{}
			}
			old, err := bind.Parse([]byte(cur))
			if err != nil {
				return Values{"content": StringVal("sha256:" + shortSum(cur))}
			}
			return bindingAttrs(old)
		},
		desired: bindingAttrs(b),
	}}, nil, nil
}

// bindingAttrs shows one attribute per GPU in a plan: "gpu.3" =
// "numa 1 (56-111,168-223), nic mlx5_5 (ibp94s0)".
func bindingAttrs(b *bind.Binding) Values {
	out := Values{}
	for _, g := range b.GPUs {
		var parts []string
		if g.NUMA == bind.Unbound {
			parts = append(parts, "unbound")
		} else {
			parts = append(parts, fmt.Sprintf("numa %d (%s)", g.NUMA, g.CPUs))
		}
		if g.NIC != "" {
			nic := "nic " + g.NIC
			if g.Netdev != "" {
				nic += " (" + g.Netdev + ")"
			}
			parts = append(parts, nic)
		}
		out["gpu."+strconv.Itoa(g.Index)] = StringVal(strings.Join(parts, ", "))
	}
	return out
}
