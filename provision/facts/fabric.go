package facts

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	itext "github.com/gpuform/gpuform/internal/text"
)

// The NVLink fabric registration of a rack-scale node's GPUs (GB200/GB300
// NVL72), read only when the controller asks (Options.Fabric): a node
// block whose nvlink_domain says the domain comes from the node groups its
// hosts by it. NVML's fabric info has no file in sysfs or procfs, so the
// probe asks `nvidia-smi -q`, which prints it per GPU in a "Fabric"
// section, and keeps only those sections and the GPU headers.

// FabricCommand is the cmd record of the fabric read.
const FabricCommand = "nvidia-smi-fabric"

// maxFabricGPUs bounds the sections read: a tray has 4 GPUs, a node 8.
const maxFabricGPUs = 64

// GPUFabric is one GPU's NVLink fabric registration as nvidia-smi -q
// prints it (NVML's nvmlGpuFabricInfo_t).
type GPUFabric struct {
	// State is "Not Started", "In Progress" or "Completed" ("N/A" where
	// the GPU has no NVLink fabric).
	State string `json:"state"`
	// Status is the NVML return of the registration ("Success",
	// "Insufficient Resources", …); meaningful once State is Completed.
	Status string `json:"status,omitempty"`
	// CliqueID is the fabric clique the GPU belongs to; 0 when none.
	CliqueID uint32 `json:"clique_id"`
	// ClusterUUID is the fabric cluster's UUID; all zeros when none.
	ClusterUUID string `json:"cluster_uuid,omitempty"`
}

// NVLinkFabric is what the fabric read found on a node.
type NVLinkFabric struct {
	// GPUs are the GPUs' registrations in nvidia-smi's order.
	GPUs []GPUFabric `json:"gpus"`
	// Error says why the fabric could not be read (nvidia-smi missing or
	// failing, output that is not nvidia-smi's); GPUs is then empty.
	Error string `json:"error,omitempty"`
}

// zeroUUID is the cluster UUID of a GPU in no fabric cluster.
const zeroUUID = "00000000-0000-0000-0000-000000000000"

// Domain is the NVLink domain the node's GPUs registered in, as
// "CLUSTER-UUID/CLIQUE" (the identity NVML gives a domain: GPUs of one
// cluster and clique reach each other over NVLink), or why there is none
// to trust: the read failed, no GPU has a fabric, a GPU's registration is
// not Completed with Success, or the GPUs disagree. A node whose fabric
// is not up is never put in a domain by a guess.
func (f *NVLinkFabric) Domain() (string, error) {
	switch {
	case f == nil:
		return "", fmt.Errorf("the NVLink fabric was not read")
	case f.Error != "":
		return "", fmt.Errorf("the NVLink fabric could not be read: %s", f.Error)
	case len(f.GPUs) == 0:
		return "", fmt.Errorf("nvidia-smi -q reports no GPU with an NVLink fabric")
	}
	key := ""
	for i, g := range f.GPUs {
		if g.State != "Completed" || g.Status != "Success" {
			return "", fmt.Errorf("GPU %d's NVLink fabric registration is %s (status %s), not Completed (Success)", i, g.State, orNone(g.Status))
		}
		if g.CliqueID == 0 || g.ClusterUUID == "" || g.ClusterUUID == zeroUUID {
			return "", fmt.Errorf("GPU %d registered in no fabric clique (clique id %d, cluster %s)", i, g.CliqueID, orNone(g.ClusterUUID))
		}
		k := fmt.Sprintf("%s/%d", g.ClusterUUID, g.CliqueID)
		if key != "" && k != key {
			return "", fmt.Errorf("the GPUs are in different fabric cliques (%s on GPU 0, %s on GPU %d)", key, k, i)
		}
		key = k
	}
	return key, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ParseFabricText reads the "Fabric" sections of `nvidia-smi -q` text,
// one per GPU in the order printed: State, Status, CliqueId and
// ClusterUUID. Lines of other sections, and the Health subsection, are
// ignored. A section without State is an error (the text is not what
// nvidia-smi prints), as is more than maxFabricGPUs sections.
func ParseFabricText(text string) ([]GPUFabric, error) {
	var out []GPUFabric
	var cur *GPUFabric
	depth := -1
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	line := 0
	flush := func() error {
		out = append(out, *cur)
		cur = nil
		if len(out) > maxFabricGPUs {
			return fmt.Errorf("more than %d Fabric sections", maxFabricGPUs)
		}
		return nil
	}
	for sc.Scan() {
		line++
		raw := sc.Text()
		trimmed := strings.TrimSpace(raw)
		indent := len(raw) - len(strings.TrimLeft(raw, " \t"))
		if trimmed == "Fabric" {
			if cur != nil {
				if err := flush(); err != nil {
					return nil, err
				}
			}
			cur, depth = &GPUFabric{}, indent
			continue
		}
		if cur == nil || trimmed == "" {
			continue
		}
		if indent <= depth {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "State":
			cur.State = val
		case "Status":
			cur.Status = val
		case "CliqueId":
			if val == "N/A" {
				break
			}
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: CliqueId %q is not a number", line, val)
			}
			cur.CliqueID = uint32(n)
		case "ClusterUUID":
			if val != "N/A" {
				cur.ClusterUUID = val
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	for i, f := range out {
		if f.State == "" {
			return nil, fmt.Errorf("fabric section %d has no State", i+1)
		}
	}
	return out, nil
}

// fabric reads the fabric record, when the probe was asked for it.
func (p *interpreter) fabric() {
	c, ok := p.raw.cmds[FabricCommand]
	if !ok {
		return
	}
	f := &NVLinkFabric{GPUs: []GPUFabric{}}
	p.n.Fabric = f
	if c.rc != 0 {
		f.Error = fmt.Sprintf("nvidia-smi -q exited %d: %s", c.rc, firstLineOf(c.out))
		return
	}
	gpus, err := ParseFabricText(c.out)
	if err != nil {
		f.Error = "nvidia-smi -q: " + err.Error()
		return
	}
	f.GPUs = gpus
}

func firstLineOf(s string) string {
	s = itext.FirstLine(s)
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" {
		return "no output"
	}
	return s
}
