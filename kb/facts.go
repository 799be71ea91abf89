package kb

import (
	"strconv"
	"strings"
)

// HostFact is one row of facts.tsv: a single fact about hosts, containers,
// GPUDirect or kernel modules that a rule cites ("docker-shm-default" is
// Docker's 64 MB /dev/shm).
type HostFact struct {
	// ID is the row's fact_id.
	ID string
	// Topic groups facts ("containers", "pcie", …).
	Topic string
	// Statement is what the fact says; Value is the value it gives.
	Statement, Value string
	Fact
}

// NCCLThreshold is one row of nccl-thresholds.tsv: a published nccl-tests
// bus-bandwidth floor or typical value.
type NCCLThreshold struct {
	Platform, Interconnect, Collective, MessageSize string
	// GPUs is the GPU count the row gives (0 when not a number).
	GPUs int
	// BusBWGBps is the bus bandwidth in GB/s.
	BusBWGBps float64
	// Kind is "floor", "typical" or "baseline".
	Kind string
	Fact
}

func (kb *KB) loadFacts() error {
	t, err := readTable(kb.fsys, "data/facts.tsv", "fact_id", "topic", "fact", "value", "status", "sources")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		f := HostFact{ID: r.get("fact_id"), Topic: r.get("topic"), Statement: r.get("fact"), Value: r.get("value"), Fact: r.fact(st, "sources", "")}
		if _, dup := kb.facts[f.ID]; dup {
			return r.errorf("fact %s defined twice", f.ID)
		}
		kb.facts[f.ID] = f
	}

	t, err = readTable(kb.fsys, "data/nccl-thresholds.tsv", "platform", "gpus", "interconnect", "collective", "message_size",
		"busbw_gbps", "kind", "status", "source")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		bw, ok := leadingNumber(r.get("busbw_gbps"))
		if !ok {
			return r.errorf("busbw_gbps %q: want a number", r.get("busbw_gbps"))
		}
		n := 0
		if f := strings.Fields(r.get("gpus")); len(f) > 0 {
			n, _ = strconv.Atoi(f[0])
		}
		kb.nccltest = append(kb.nccltest, NCCLThreshold{
			Platform: r.get("platform"), Interconnect: r.get("interconnect"), Collective: r.get("collective"),
			MessageSize: r.get("message_size"), GPUs: n, BusBWGBps: bw, Kind: r.get("kind"),
			Fact: r.fact(cellStatus(r.get("busbw_gbps"), st), "source", ""),
		})
	}
	return nil
}

// HostFact returns a fact of facts.tsv by id ("docker-shm-default",
// "nccl-docker-shm", "peermem-since", "open-modules-default",
// "fm-version-match", …).
func (kb *KB) HostFact(id string) (HostFact, bool) {
	f, ok := kb.facts[id]
	return f, ok
}

// NCCLThresholds returns every published nccl-tests threshold row.
func (kb *KB) NCCLThresholds() []NCCLThreshold {
	return append([]NCCLThreshold(nil), kb.nccltest...)
}
