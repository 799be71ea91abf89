package lint

import (
	"fmt"
)

// hugepagesExceedRAMRule declares hugepages_exceed_ram.
func hugepagesExceedRAMRule() Rule {
	return Rule{
		Name:     "hugepages_exceed_ram",
		Severity: Error,
		Summary:  "The hugepages reservation is larger than the node's RAM.",
		Check:    checkHugepages,
	}
}

func checkHugepages(ctx *Context) {
	for _, n := range ctx.Nodes() {
		hp := n.Hugepages
		if hp == nil || !hp.Size.Set || !hp.Count.Set || n.Hardware == nil || n.Hardware.Memory.Bytes == 0 {
			continue
		}
		ram := n.Hardware.Memory.Bytes
		if hp.Size.V.IsPercent() || hp.Size.V.Unlimited || hp.Count.V <= 0 {
			continue
		}
		total := hp.Size.V.Bytes * uint64(hp.Count.V)
		if hp.Count.V > 0 && total/uint64(hp.Count.V) != hp.Size.V.Bytes || total >= ram {
			ctx.Report(hp.Count.Range,
				fmt.Sprintf("%s: %d hugepages of %s reserve more than the node's %s of RAM", nodeRef(n), hp.Count.V, hp.Size.V, humanBytes(ram)),
				"Huge pages are reserved at boot and are not available to anything else; reserving RAM or more leaves the kernel without memory and the node does not boot or OOM-kills at once (https://www.kernel.org/doc/html/latest/admin-guide/mm/hugetlbpage.html). Lower count so that size × count leaves room for the OS, CUDA pinned memory and /dev/shm.")
		}
	}
}
