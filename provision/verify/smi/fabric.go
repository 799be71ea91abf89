package smi

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// ParseFabric reads the "Fabric" sections of `nvidia-smi -q` text, one per
// GPU in the order printed: State, Status, CliqueId and ClusterUUID, the
// four fields NVML's fabric info holds (nvmlfacts.Fabric). Lines of other
// sections, and the Health subsection, are ignored. A section without
// State is an error: the text is not what nvidia-smi prints.
func ParseFabric(text string) ([]nvmlfacts.Fabric, error) {
	var out []nvmlfacts.Fabric
	var cur *nvmlfacts.Fabric
	depth := -1
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Text()
		trimmed := strings.TrimSpace(raw)
		indent := len(raw) - len(strings.TrimLeft(raw, " \t"))
		if trimmed == "Fabric" {
			if cur != nil {
				out = append(out, *cur)
			}
			cur, depth = &nvmlfacts.Fabric{}, indent
			continue
		}
		if cur == nil || trimmed == "" {
			continue
		}
		if indent <= depth {
			out = append(out, *cur)
			cur = nil
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
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: CliqueId %q is not a number", line, val)
			}
			cur.CliqueID = uint32(n)
		case "ClusterUUID":
			cur.ClusterUUID = val
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		out = append(out, *cur)
	}
	for i, f := range out {
		if f.State == "" {
			return nil, fmt.Errorf("fabric section %d has no State", i+1)
		}
	}
	return out, nil
}
