// Package hostrange folds host names into Slurm-style ranges and groups
// hosts with identical results, so that reports over hundreds of hosts
// (plan, verify, facts) read as one block per distinct outcome.
package hostrange

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Group is the items that share one key, in the order they were given.
type Group[T any] struct {
	// Key is what the items have in common.
	Key string
	// Items are the members, first seen first.
	Items []T
}

// GroupBy groups items by key, in order of each group's first item.
func GroupBy[T any](items []T, key func(T) string) []Group[T] {
	var groups []Group[T]
	index := map[string]int{}
	for _, it := range items {
		k := key(it)
		if i, ok := index[k]; ok {
			groups[i].Items = append(groups[i].Items, it)
			continue
		}
		index[k] = len(groups)
		groups = append(groups, Group[T]{Key: k, Items: []T{it}})
	}
	return groups
}

var numbered = lazyre.New(`^(.*?)([0-9]+)([^0-9]*)$`)

// Title is a group's hosts as one report heading: their names folded, and
// how many they are when more than one ("gpu[01-04] (4 hosts)").
func Title(names []string) string {
	if len(names) > 1 {
		return Fold(names) + " (" + strconv.Itoa(len(names)) + " hosts)"
	}
	return Fold(names)
}

// Fold writes host names compactly, Slurm style: gpu001, gpu002,
// gpu003 and gpu007 become "gpu[001-003,007]". Names fold when they share
// the text around their number and the numbers are written alike (all the
// same width, or none zero-padded); other names stay as they are.
func Fold(names []string) string {
	type num struct {
		n      int
		digits string
	}
	type run struct {
		pre, suf string
		nums     []num
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
		if m == nil {
			plain = append(plain, n)
			continue
		}
		v, err := strconv.Atoi(m[2])
		if err != nil {
			plain = append(plain, n)
			continue
		}
		id := m[1] + "\x00" + m[3] + rest
		r, ok := runs[id]
		if !ok {
			r = &run{pre: m[1], suf: m[3] + rest}
			runs[id] = r
			order = append(order, id)
		}
		r.nums = append(r.nums, num{v, m[2]})
	}
	var parts []string
	for _, id := range order {
		r := runs[id]
		// Split the run by how its numbers are written: one width for all,
		// or no padding anywhere; otherwise each width on its own.
		groups := map[int][]int{}
		var widths []int
		same, padded := true, false
		for _, x := range r.nums {
			if len(x.digits) != len(r.nums[0].digits) {
				same = false
			}
			if len(x.digits) > 1 && x.digits[0] == '0' {
				padded = true
			}
		}
		for _, x := range r.nums {
			w := len(x.digits)
			switch {
			case same:
				w = len(r.nums[0].digits)
			case !padded:
				w = 0
			}
			if _, ok := groups[w]; !ok {
				widths = append(widths, w)
			}
			groups[w] = append(groups[w], x.n)
		}
		for _, w := range widths {
			nums := groups[w]
			if len(nums) == 1 {
				parts = append(parts, r.pre+pad(nums[0], w)+r.suf)
				continue
			}
			sort.Ints(nums)
			var ranges []string
			for i := 0; i < len(nums); {
				j := i
				for j+1 < len(nums) && nums[j+1] <= nums[j]+1 {
					j++
				}
				if j == i {
					ranges = append(ranges, pad(nums[i], w))
				} else {
					ranges = append(ranges, pad(nums[i], w)+"-"+pad(nums[j], w))
				}
				i = j + 1
			}
			parts = append(parts, r.pre+"["+strings.Join(ranges, ",")+"]"+r.suf)
		}
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
