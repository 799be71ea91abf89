package resource

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// shmResource sizes /dev/shm: the fstab line for the next boot and a live
// remount now. NCCL's shared-memory transport and PyTorch DataLoader
// workers live in /dev/shm.
type shmResource struct {
	base
	size spec.Size
	opt  string
}

func newShmResource(size spec.Size) (*shmResource, error) {
	opt := tmpfsSize(size)
	if err := check(shmSizePattern, "tmpfs size", opt); err != nil {
		return nil, err
	}
	return &shmResource{base: base{name: ShmMount}, size: size, opt: opt}, nil
}

// shmReads declares what shm reads back on a node: /etc/fstab, edited line
// by line.
func shmReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{FstabFile}}
}

// buildShm sizes /dev/shm when the spec's shm block gives a size.
func buildShm(in *buildInput) ([]Resource, []string, error) {
	n := in.n
	if n.Shm == nil || !n.Shm.Size.Set {
		return nil, nil, nil
	}
	r, err := newShmResource(n.Shm.Size.V)
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// tmpfsSize renders a size as tmpfs's size= option: a percentage of RAM,
// or bytes in the largest of k, m, g that divides them.
func tmpfsSize(s spec.Size) string {
	if s.IsPercent() {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	for _, u := range []struct {
		s string
		m uint64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if s.Bytes >= u.m && s.Bytes%u.m == 0 {
			return strconv.FormatUint(s.Bytes/u.m, 10) + u.s
		}
	}
	return strconv.FormatUint(s.Bytes, 10)
}

// fstabSize returns the size= option of an fstab line, "" when none.
func fstabSize(line string) string {
	f := strings.Fields(line)
	if len(f) < 4 {
		return ""
	}
	for _, o := range strings.Split(f[3], ",") {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			return v
		}
	}
	return ""
}

// sameSize compares two tmpfs size options by what they mean on this node.
func sameSize(a, b string, ram uint64) bool {
	if a == b {
		return true
	}
	pa, ea := parseTmpfsSize(a, ram)
	pb, eb := parseTmpfsSize(b, ram)
	return ea && eb && pa == pb
}

func parseTmpfsSize(s string, ram uint64) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	sz, err := spec.ParseSize(s)
	if err != nil {
		return 0, false
	}
	return sz.Resolve(ram), true
}

func (r *shmResource) Diff(n *facts.Node) (Change, error) {
	want := r.size.Resolve(n.MemoryBytes)
	after := Values{"fstab": StringVal("size=" + r.opt), "mounted_size": StringVal(sizeText(want))}
	cf := currentFile(n, FstabFile)
	if cf.Error != "" {
		return Change{}, fmt.Errorf("%s: gpuform will not rewrite it: %s", FstabFile, cf.Error)
	}
	entry, err := fstabShmEntry(cf.Data)
	if err != nil {
		return Change{}, err
	}
	var before Values
	if n.Shm.Mounted || entry >= 0 {
		before = Values{}
		if entry >= 0 {
			before["fstab"] = StringVal("size=" + fstabSize(fstabLine(cf.Data, entry)))
			if fstabSize(fstabLine(cf.Data, entry)) == "" {
				before["fstab"] = StringVal("(no size)")
			}
		}
		if n.Shm.Mounted {
			before["mounted_size"] = StringVal(sizeText(n.Shm.SizeBytes))
		}
	}
	fstabOK := entry >= 0 && sameSize(fstabSize(fstabLine(cf.Data, entry)), r.opt, n.MemoryBytes)
	// tmpfs rounds the size to whole pages; a MiB of slack absorbs that.
	liveOK := n.Shm.Mounted && absDiff(n.Shm.SizeBytes, want) <= 1<<20
	c := r.change(before, after)
	if fstabOK && liveOK {
		c.Action = NoOp
		c.After = c.Before
		return c, nil
	}
	if c.Action == NoOp {
		c.Action = Update
	}
	if !fstabOK {
		line := "tmpfs /dev/shm tmpfs defaults,nosuid,nodev,size=" + r.opt + " 0 0"
		s, err := fileWrite{
			desc:    "set /dev/shm size=" + r.opt + " in /etc/fstab",
			path:    FstabFile,
			content: string(setFstabLine(cf.Data, entry, line)),
			cur:     cf,
		}.step()
		if err != nil {
			return Change{}, err
		}
		c.Steps = append(c.Steps, s)
	}
	if !liveOK {
		c.Steps = append(c.Steps, scriptStep("remount /dev/shm with size="+r.opt, shmRemountScript, r.opt))
	}
	return c, nil
}

// fstabLines splits fstab into its lines, each without its newline; a
// last line without a newline is a line too.
func fstabLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// fstabFields splits an fstab line at blanks and tabs, as mount(8) does;
// nil for a comment or a blank line.
func fstabFields(line []byte) [][]byte {
	f := bytes.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) == 0 || f[0][0] == '#' {
		return nil
	}
	return f
}

// fstabShmEntry returns the index of the /dev/shm line of fstab, -1 when
// there is none. Two of them are an error: which one the next boot uses
// is not gpuform's to guess, and rewriting one would leave the other.
func fstabShmEntry(data []byte) (int, error) {
	found := -1
	for i, line := range fstabLines(data) {
		f := fstabFields(line)
		if len(f) < 2 || string(f[1]) != "/dev/shm" {
			continue
		}
		if found >= 0 {
			return 0, fmt.Errorf("%s has two /dev/shm entries (lines %d and %d); gpuform will not guess which one counts: remove one, then plan again", FstabFile, found+1, i+1)
		}
		found = i
	}
	return found, nil
}

// fstabLine returns line i of fstab as text, "" for -1.
func fstabLine(data []byte, i int) string {
	if i < 0 {
		return ""
	}
	return string(fstabLines(data)[i])
}

// setFstabLine returns fstab with line i replaced by line, or line
// appended when i is -1. Every other byte stays as it was; a last line
// without a newline gets one when line goes after it.
func setFstabLine(data []byte, i int, line string) []byte {
	lines := fstabLines(data)
	var out bytes.Buffer
	for j, l := range lines {
		if j == i {
			out.WriteString(line + "\n")
			continue
		}
		out.Write(l)
		if j < len(lines)-1 || data[len(data)-1] == '\n' || i < 0 {
			out.WriteByte('\n')
		}
	}
	if i < 0 {
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

// sizeText renders a size for people: exact binary units when they fit
// ("16GiB"), else one decimal of the largest unit ("1007.8GiB"), since
// tmpfs sizes of a percentage of RAM are rarely round.
func sizeText(n uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m {
			if n%u.m == 0 {
				return strconv.FormatUint(n/u.m, 10) + u.s
			}
			return strconv.FormatFloat(float64(n)/float64(u.m), 'f', 1, 64) + u.s
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
