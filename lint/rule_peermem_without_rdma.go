package lint

import (
	"fmt"
)

// peermemWithoutRDMARule declares peermem_without_rdma.
func peermemWithoutRDMARule() Rule {
	return Rule{
		Name:     "peermem_without_rdma",
		Severity: Warning,
		Summary:  "nvidia-peermem is requested on a node without RDMA NICs.",
		Check:    checkPeermemWithoutRDMA,
	}
}

func checkPeermemWithoutRDMA(ctx *Context) {
	fact, ok := ctx.hostFact("peermem-needed")
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		d := n.Driver
		if d == nil || !d.Peermem.Set || !d.Peermem.V || n.Hardware == nil || len(rdmaNICs(n.Hardware)) > 0 {
			continue
		}
		ctx.Report(d.Peermem.Range,
			fmt.Sprintf("%s: peermem = true but %s has no RDMA NIC", nodeRef(n), hwName(n.Hardware)),
			fmt.Sprintf("nvidia-peermem exists to let RDMA NICs (InfiniBand/RoCE) read and write GPU memory (%s). Without an RDMA NIC the module has nothing to serve, and on hosts without the RDMA core stack modprobe fails at every boot. Set peermem = false, or declare the RDMA NICs (rdma = true) in the hardware profile.", cite(fact.Fact)))
	}
}
