package plan

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Group is a set of hosts whose plans are identical.
type Group struct {
	// Hosts are the hosts, in plan order.
	Hosts []*HostPlan
}

// Groups returns the hosts grouped by identical plans (same node, same
// changes, same warnings, same error), in order of each group's first
// host, so that 500 identical hosts read as one plan.
func (p *Plan) Groups() []Group {
	var groups []Group
	index := map[string]int{}
	for _, h := range p.Hosts {
		key := h.signature()
		if i, ok := index[key]; ok {
			groups[i].Hosts = append(groups[i].Hosts, h)
			continue
		}
		index[key] = len(groups)
		groups = append(groups, Group{Hosts: []*HostPlan{h}})
	}
	return groups
}

func (h *HostPlan) signature() string {
	b, _ := json.Marshal(struct {
		Node     string
		Error    string
		Warnings []string
		Changes  []ResourceChange
	}{h.Node, h.Error, h.Warnings, h.ResourceChanges})
	return string(b)
}

// Names returns the group's host names.
func (g Group) Names() []string {
	out := make([]string, len(g.Hosts))
	for i, h := range g.Hosts {
		out[i] = h.Host
	}
	return out
}

var numbered = regexp.MustCompile(`^(.*?)([0-9]+)([^0-9]*)$`)

// FoldHosts writes host names compactly, Slurm style: gpu001, gpu002,
// gpu003 and gpu007 become "gpu[001-003,007]". Names that do not share a
// prefix, suffix and digit width stay as they are.
func FoldHosts(names []string) string {
	type key struct{ pre, suf string }
	type run struct {
		k     key
		width int
		nums  []int
		order int
	}
	var plain []string
	runs := map[string]*run{}
	var order []string
	for _, n := range names {
		// Number the first DNS label (gpu001 in gpu001.dc1.example.com),
		// the part a Slurm-style range varies.
		label, rest := n, ""
		if i := strings.IndexByte(n, '.'); i > 0 && !strings.Contains(n, "/") {
			label, rest = n[:i], n[i:]
		}
		m := numbered.FindStringSubmatch(label)
		if m != nil {
			m[3] += rest
		}
		if m == nil {
			plain = append(plain, n)
			continue
		}
		// Zero-padded numbers keep their width; unpadded ones have none,
		// so node9 and node10 fold together.
		width := 0
		if len(m[2]) > 1 && m[2][0] == '0' {
			width = len(m[2])
		}
		id := m[1] + "\x00" + m[3] + "\x00" + strconv.Itoa(width)
		num, err := strconv.Atoi(m[2])
		if err != nil {
			plain = append(plain, n)
			continue
		}
		r, ok := runs[id]
		if !ok {
			r = &run{k: key{m[1], m[3]}, width: width}
			runs[id] = r
			order = append(order, id)
		}
		r.nums = append(r.nums, num)
	}
	var parts []string
	for _, id := range order {
		r := runs[id]
		if len(r.nums) == 1 {
			parts = append(parts, r.k.pre+pad(r.nums[0], r.width)+r.k.suf)
			continue
		}
		sort.Ints(r.nums)
		var ranges []string
		for i := 0; i < len(r.nums); {
			j := i
			for j+1 < len(r.nums) && r.nums[j+1] == r.nums[j]+1 {
				j++
			}
			if j == i {
				ranges = append(ranges, pad(r.nums[i], r.width))
			} else {
				ranges = append(ranges, pad(r.nums[i], r.width)+"-"+pad(r.nums[j], r.width))
			}
			i = j + 1
		}
		parts = append(parts, r.k.pre+"["+strings.Join(ranges, ",")+"]"+r.k.suf)
	}
	parts = append(parts, plain...)
	return strings.Join(parts, ", ")
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func sortedHostKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
