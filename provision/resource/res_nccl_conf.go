package resource

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nccltopo"
	"github.com/gpuform/gpuform/spec"
)

// ncclConfReads declares what nccl_conf reads back on a node: the pending
// marker of an interrupted write (in pendingDir) and the nccl.conf it edits
// key by key.
func ncclConfReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{NCCLConfFile}, ManagedDirs: []string{pendingDir}}
}

// buildNCCLConf sets gpuform's keys of /etc/nccl.conf when the affinity
// block asks for NCCL's environment.
func buildNCCLConf(in *buildInput) ([]Resource, []string, error) {
	nc, err := ncclConf(in.n, in.f)
	if err != nil {
		return nil, nil, err
	}
	if nc == nil {
		return nil, nil, nil
	}
	return []Resource{nc}, nil, nil
}

// ncclConf writes /etc/nccl.conf from the affinity block: NCCL_IB_HCA lists
// the NICs paired with GPUs in GPU order (or the explicit list), and
// NCCL_SOCKET_IFNAME when given. NCCL reads this file at init. Where the
// topology file is written (nccltopo.Decide), NCCL_TOPO_FILE points at it,
// with or without nccl_env.
func ncclConf(n *spec.Node, f *facts.Node) (*fileResource, error) {
	a := n.Affinity
	topo, _ := nccltopo.Decide(n, f)
	cur := ""
	if f.NCCLConf != nil {
		cur = f.NCCLConf.Content
	}
	// Only the keys gpuform writes can be a spec's: the file's other
	// settings are the operator's.
	var fileKeys []string
	for _, k := range slices.Sorted(maps.Keys(keyValueLines(cur))) {
		if slices.Contains(ncclKeys, k) {
			fileKeys = append(fileKeys, k)
		}
	}
	// Other specs may own other keys of the file (see keyShare).
	share := shareOf(n.Owner, f, NCCLConf, fileKeys)
	// NCCL_TOPO_FILE naming gpuform's own file is gpuform's key even when
	// the spec no longer asks for the file: left behind it would point
	// every job at a file apply has just removed (NCCL then fails to init).
	// Unless another spec has it, which writes that file itself.
	var drop []string
	if _, theirs := share.others["NCCL_TOPO_FILE"]; !topo && !theirs && keyValueLines(cur)["NCCL_TOPO_FILE"] == nccltopo.File {
		drop = append(drop, "NCCL_TOPO_FILE")
	}
	// The keys recorded under this spec that it no longer declares go.
	mineOnly := func(want map[string]string) {
		for _, k := range share.drop(want) {
			if !slices.Contains(drop, k) {
				drop = append(drop, k)
			}
		}
		slices.Sort(drop)
	}
	if a == nil || !a.NCCLEnv.V && !topo {
		mineOnly(nil)
		if len(drop) == 0 {
			return nil, nil
		}
		a = &spec.Affinity{}
	}
	var hcas []string
	// Without nccl_env only the topology file's key is written.
	if a.NCCLEnv.V && len(a.NCCLIBHCA) > 0 {
		for _, h := range a.NCCLIBHCA {
			hcas = append(hcas, h.V)
		}
	} else if a.NCCLEnv.V {
		gpus := make([]int, 0, len(a.GPUNIC))
		for g := range a.GPUNIC {
			gpus = append(gpus, g)
		}
		sort.Ints(gpus)
		seen := map[string]bool{}
		for _, g := range gpus {
			if nic := a.GPUNIC[g].V; !seen[nic] {
				seen[nic] = true
				hcas = append(hcas, nic)
			}
		}
	}
	// The spec checks these too; a value with a newline must never reach
	// the file, where it would be a setting of its own for every job.
	for _, h := range hcas {
		if err := check(ncclHCAPattern, "NCCL_IB_HCA entry", h); err != nil {
			return nil, err
		}
	}
	if a.NCCLEnv.V && a.NCCLSocketIfname.Set {
		if err := check(ncclIfnamePattern, "NCCL_SOCKET_IFNAME", a.NCCLSocketIfname.V); err != nil {
			return nil, err
		}
	}
	want := map[string]string{}
	var keys []string
	if len(hcas) > 0 {
		want["NCCL_IB_HCA"] = strings.Join(hcas, ",")
		keys = append(keys, "NCCL_IB_HCA")
	}
	if a.NCCLEnv.V && a.NCCLSocketIfname.Set {
		want["NCCL_SOCKET_IFNAME"] = a.NCCLSocketIfname.V
		keys = append(keys, "NCCL_SOCKET_IFNAME")
	}
	if topo {
		want["NCCL_TOPO_FILE"] = nccltopo.File
		keys = append(keys, "NCCL_TOPO_FILE")
	}
	mineOnly(want)
	if len(keys) == 0 && len(drop) == 0 {
		return nil, nil
	}
	sortedKeys := slices.Sorted(slices.Values(keys))
	edit := func(cur []byte, _ bool) (string, error) {
		out, err := setKeyLines(cur, keys, want, drop)
		if err != nil {
			return "", err
		}
		hdr := ""
		if share.claims {
			hdr = share.header(sortedKeys, fileKeys, func(keys []string) string {
				return "the keys " + strings.Join(keys, ", ") + "; other lines are left as they are"
			}, "; other lines are left as they are")
		}
		if hdr == "" {
			if len(keys) == 0 {
				// gpuform manages no key of the file any more: its
				// header goes.
				_, rest := splitHeader(out)
				return rest, nil
			}
			return out, nil
		}
		return withHeader(out, hdr), nil
	}
	// Not empty: the file is wanted; edit computes it.
	content := "wanted"
	if len(keys) == 0 && f.NCCLConf != nil {
		// A file that held nothing but gpuform's key and header goes whole.
		if rest, err := edit([]byte(f.NCCLConf.Content), true); err == nil && strings.TrimSpace(rest) == "" {
			content = ""
		}
	}
	return &fileResource{
		base:    base{name: NCCLConf},
		path:    NCCLConfFile,
		content: content,
		edit:    edit,
		current: func(f *facts.Node) (string, bool) {
			if f.NCCLConf == nil {
				return "", false
			}
			return f.NCCLConf.Content, true
		},
		// Only gpuform's keys: the operator's other settings stay as they are.
		attrs: textAttrs(func(_ *facts.Node, cur string, _ bool) map[string]string {
			out := map[string]string{}
			all := keyValueLines(cur)
			for _, k := range slices.Concat(keys, drop) {
				if v, ok := all[k]; ok {
					out[k] = v
				}
			}
			return out
		}),
		desired: stringVals(want),
		keyed:   share.keyedFile(want, fileKeys),
	}, nil
}

// ncclKeys are the keys of nccl.conf gpuform writes.
var ncclKeys = []string{"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_TOPO_FILE"}

// setKeyLines sets KEY=value lines of a file such as nccl.conf: the line
// of each key in keys is replaced where it is, or appended, and the line
// of each key in drop is removed; every other byte is kept. A key set
// twice is an error, since which line wins is the reader's business.
func setKeyLines(cur []byte, keys []string, want map[string]string, drop []string) (string, error) {
	return setKeyLinesAs(cur, keys, want, drop, func(k, v string) string { return k + "=" + v + "\n" })
}

// setKeyLinesAs is setKeyLines for a file whose lines line writes
// ("key = value\n" in a sysctl.d drop-in).
func setKeyLinesAs(cur []byte, keys []string, want map[string]string, drop []string, format func(k, v string) string) (string, error) {
	lines := fstabLines(cur)
	at := map[string]int{}
	gone := map[int]bool{}
	for i, line := range lines {
		t := strings.TrimLeft(string(line), " \t")
		k, _, ok := strings.Cut(t, "=")
		if !ok || strings.HasPrefix(t, "#") {
			continue
		}
		k = strings.TrimSpace(k)
		if slices.Contains(drop, k) {
			gone[i] = true
			continue
		}
		if _, managed := want[k]; !managed {
			continue
		}
		if j, dup := at[k]; dup {
			return "", fmt.Errorf("%s is set twice (lines %d and %d); remove one, then plan again", k, j+1, i+1)
		}
		at[k] = i
	}
	var b strings.Builder
	for i, line := range lines {
		if gone[i] {
			continue
		}
		replaced := false
		for k, j := range at {
			if j == i {
				b.WriteString(format(k, want[k]))
				replaced = true
			}
		}
		if replaced {
			continue
		}
		b.Write(line)
		if i < len(lines)-1 || cur[len(cur)-1] == '\n' || len(at) < len(keys) {
			b.WriteByte('\n')
		}
	}
	for _, k := range keys {
		if _, ok := at[k]; !ok {
			b.WriteString(format(k, want[k]))
		}
	}
	return b.String(), nil
}

// withHeader puts hdr at the top of a file gpuform edits but does not own
// whole, in place of the header an earlier apply wrote there. NCCL reads
// lines starting with "#" in nccl.conf as comments.
func withHeader(content, hdr string) string {
	_, rest := splitHeader(content)
	return hdr + rest
}
