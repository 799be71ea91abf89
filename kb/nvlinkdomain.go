package kb

import (
	"strconv"
	"strings"
)

// NVLinkDomainPlatform is a rack-scale NVLink system (nvlink-domains.tsv):
// how many trays of how many GPUs share one NVLink domain, whether the
// trays need IMEX, and the all_reduce bus bandwidth a healthy domain was
// published to reach with NVLink SHARP.
type NVLinkDomainPlatform struct {
	// Platform names the system ("GB200 NVL72").
	Platform string
	// GPUModel is the model of gpu-models.tsv the trays carry.
	GPUModel string
	// GPUsPerTray is how many GPUs one compute tray (one host) has.
	GPUsPerTray int
	// Trays is how many compute trays one domain has.
	Trays int
	// DomainGPUs is how many GPUs share the domain (Trays x GPUsPerTray).
	DomainGPUs int
	// IMEXRequired says whether every tray must run nvidia-imex for
	// memory sharing across the domain.
	IMEXRequired bool
	// NVLSBusBWGBps is the published all_reduce busbw of a whole healthy
	// domain at NVLSMessage; NVLSKind says what it is ("typical" for a
	// published run, "baseline" for a vendor's validated baseline).
	NVLSBusBWGBps float64
	NVLSMessage   string
	NVLSKind      string
	Fact
}

// NVLinkDomainPlatforms returns the rows of nvlink-domains.tsv in file order.
func (kb *KB) NVLinkDomainPlatforms() []NVLinkDomainPlatform { return kb.nvlinkDomains }

// NVLinkDomainPlatformFor returns the rack-scale platform whose trays carry
// the GPU model that name resolves to (any spelling GPU accepts).
func (kb *KB) NVLinkDomainPlatformFor(name string) (NVLinkDomainPlatform, bool) {
	m, ok := kb.GPU(name)
	if !ok {
		return NVLinkDomainPlatform{}, false
	}
	for _, p := range kb.nvlinkDomains {
		if p.GPUModel == m.Name {
			return p, true
		}
	}
	return NVLinkDomainPlatform{}, false
}

// loadNVLinkDomains reads nvlink-domains.tsv. Every model must be a row of
// gpu-models.tsv and every domain whole trays.
func (kb *KB) loadNVLinkDomains() error {
	t, err := readTable(kb.fsys, "data/nvlink-domains.tsv", "platform", "gpu_model", "gpus_per_tray", "trays", "domain_gpus", "imex", "nvls_busbw_gbps", "nvls_message", "nvls_kind", "status", "sources", "notes")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		p := NVLinkDomainPlatform{Platform: r.get("platform"), GPUModel: r.get("gpu_model"), NVLSMessage: r.get("nvls_message"), NVLSKind: r.get("nvls_kind")}
		if seen[p.Platform] {
			return r.errorf("platform %q defined twice", p.Platform)
		}
		seen[p.Platform] = true
		if kb.modelIndex(p.GPUModel) < 0 {
			return r.errorf("gpu_model %q is not a model of gpu-models.tsv", p.GPUModel)
		}
		for _, c := range []struct {
			col string
			to  *int
		}{{"gpus_per_tray", &p.GPUsPerTray}, {"trays", &p.Trays}, {"domain_gpus", &p.DomainGPUs}} {
			n, err := strconv.Atoi(r.get(c.col))
			if err != nil || n < 1 {
				return r.errorf("%s %q: want a positive whole number", c.col, r.get(c.col))
			}
			*c.to = n
		}
		if p.DomainGPUs != p.Trays*p.GPUsPerTray {
			return r.errorf("domain_gpus %d is not trays x gpus_per_tray (%d x %d)", p.DomainGPUs, p.Trays, p.GPUsPerTray)
		}
		switch r.get("imex") {
		case "required":
			p.IMEXRequired = true
		case "no":
		default:
			return r.errorf("imex %q: want required or no", r.get("imex"))
		}
		bw, err := strconv.ParseFloat(r.get("nvls_busbw_gbps"), 64)
		if err != nil || bw <= 0 {
			return r.errorf("nvls_busbw_gbps %q: want a positive number", r.get("nvls_busbw_gbps"))
		}
		p.NVLSBusBWGBps = bw
		if !strings.HasSuffix(p.NVLSMessage, "G") && !strings.HasSuffix(p.NVLSMessage, "M") {
			return r.errorf("nvls_message %q: want a size like 8G", p.NVLSMessage)
		}
		if p.NVLSKind != "typical" && p.NVLSKind != "baseline" {
			return r.errorf("nvls_kind %q: want typical or baseline", p.NVLSKind)
		}
		p.Fact = r.fact(st, "sources", "notes")
		kb.nvlinkDomains = append(kb.nvlinkDomains, p)
	}
	return nil
}
