package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// fabricKey is the clique and cluster a host's GPUs registered in, "" when
// the host reports none (no NVML, the nvidia-smi fallback, or no GPU
// registered).
func fabricKey(rep *nvmlfacts.Report) string {
	if rep == nil {
		return ""
	}
	for _, g := range rep.GPUs {
		if f := g.Fabric; f != nil && f.State == "Completed" && f.Status == "Success" && f.CliqueID != 0 {
			return fmt.Sprintf("clique %d cluster %s", f.CliqueID, f.ClusterUUID)
		}
	}
	return ""
}

// addDomainChecks adds, to every verified host of an NVLink domain,
// firmware.domain_drift (its GPUs' VBIOS, NICs' firmware and BIOS the
// ones most of the domain runs)
// and, where the node is a rack-scale tray, nvml.fabric_domain: the host's
// clique and cluster must be the one most of the domain's hosts report. A
// host that reports none is an error; its own nvml.fabric says why.
func addDomainChecks(targets []target.Host, hosts []report.Host) {
	byName := map[string]int{}
	for i, h := range hosts {
		byName[h.Host] = i
	}
	type domain struct {
		name   string
		hosts  []string
		fabric bool
	}
	var domains []domain
	seen := map[string]int{}
	for _, tg := range targets {
		n := tg.Node
		if n == nil {
			continue
		}
		name := n.NVLinkDomainOf(tg.Host.Name)
		if name == "" {
			continue
		}
		if n.FabricDomainBlock(tg.Host.Name) != nil {
			// Read from the fabric: the host's domain is the clique
			// its GPUs registered in, as NVML reports it now.
			hi, verified := byName[tg.Host.Name]
			if !verified {
				continue
			}
			k := fabricKey(hosts[hi].NVML)
			if k == "" {
				hosts[hi].Checks = append(hosts[hi].Checks, verify.CheckResult{
					ID: string(verify.CheckFabricDomain), Status: verify.StatusError, Observed: "none",
					Expected: fmt.Sprintf("a fabric clique (nvlink_domain %q is read from the NVLink fabric)", name),
					Message:  "the host reports no fabric registration, so its NVLink domain is not known (see nvml.fabric)",
				})
				continue
			}
			name = name + " (" + k + ")"
		}
		i, ok := seen[name]
		if !ok {
			i = len(domains)
			seen[name] = i
			domains = append(domains, domain{name: name})
		}
		if !slices.Contains(domains[i].hosts, tg.Host.Name) {
			domains[i].hosts = append(domains[i].hosts, tg.Host.Name)
		}
		if verify.ExpectationFor(n).Fabric {
			domains[i].fabric = true
		}
	}
	for _, d := range domains {
		addFirmwareDrift(d.name, d.hosts, byName, hosts)
		if !d.fabric {
			continue
		}
		count := map[string]int{}
		var keys []string
		for _, h := range d.hosts {
			i, ok := byName[h]
			if !ok {
				continue
			}
			k := fabricKey(hosts[i].NVML)
			if k == "" {
				continue
			}
			if count[k] == 0 {
				keys = append(keys, k)
			}
			count[k]++
		}
		// The clique most of the domain's trays are in; ties go to the one
		// seen first, in spec order.
		want := ""
		for _, k := range keys {
			if count[k] > count[want] {
				want = k
			}
		}
		for _, h := range d.hosts {
			i, ok := byName[h]
			if !ok {
				continue
			}
			r := verify.CheckResult{ID: string(verify.CheckFabricDomain), Expected: fmt.Sprintf("the fabric clique of NVLink domain %q: %s (%d of %d trays)", d.name, orNone(want), count[want], len(d.hosts))}
			k := fabricKey(hosts[i].NVML)
			r.Observed = orNone(k)
			switch {
			case k == "":
				r.Status, r.Message = verify.StatusError, "the host reports no fabric registration to compare (see nvml.fabric)"
			case k != want:
				var others []string
				for _, o := range keys {
					if o != k {
						others = append(others, fmt.Sprintf("%s on %d", o, count[o]))
					}
				}
				r.Status = verify.StatusFail
				r.Message = fmt.Sprintf("in %s, not in the clique of the rest of NVLink domain %q (%s): the tray is not in the domain's NVLink partition", k, d.name, strings.Join(others, ", "))
			default:
				r.Status = verify.StatusPass
			}
			hosts[i].Checks = append(hosts[i].Checks, r)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// firmwareKind is one kind of firmware firmware.domain_drift compares
// across a domain: what it is called, each host's one version of it ("" when
// none or mixed), and what a host without one is told.
type firmwareKind struct {
	label   string
	of      func(report.Host) string
	missing string
	// always keeps the result (a skip) where no host reports the kind;
	// the others are judged only where some host does.
	always bool
}

var firmwareKinds = []firmwareKind{
	{label: "GPU VBIOS", always: true, of: func(h report.Host) string { return verify.HostVBIOS(h.NVML) },
		missing: "the host's GPUs report no VBIOS version, or differ among themselves (see nvml.vbios)"},
	{label: "NIC firmware", of: func(h report.Host) string {
		if h.Firmware == nil {
			return ""
		}
		return h.Firmware.NIC
	}, missing: "the host's RDMA adapters report no firmware version, or differ among themselves (see nic.firmware)"},
	{label: "BIOS", of: func(h report.Host) string {
		if h.Firmware == nil {
			return ""
		}
		return h.Firmware.BIOS
	}, missing: "the host reports no BIOS version (/sys/class/dmi/id/bios_version)"},
	{label: "BMC firmware", of: func(h report.Host) string {
		if h.Firmware == nil {
			return ""
		}
		return h.Firmware.BMC
	}, missing: "the host's BMC was not read (no ipmitool or /dev/ipmi0, or ipmitool mc info failed; see host.bmc)"},
}

// addFirmwareDrift judges firmware.domain_drift on the verified hosts of
// one domain, once for each kind of firmware: each host must run one
// version, the one most of the domain's hosts run.
func addFirmwareDrift(name string, domainHosts []string, byName map[string]int, hosts []report.Host) {
	for _, kind := range firmwareKinds {
		addFirmwareKindDrift(kind, name, domainHosts, byName, hosts)
	}
}

func addFirmwareKindDrift(kind firmwareKind, name string, domainHosts []string, byName map[string]int, hosts []report.Host) {
	count := map[string]int{}
	var keys []string
	for _, h := range domainHosts {
		if i, ok := byName[h]; ok {
			if v := kind.of(hosts[i]); v != "" {
				if count[v] == 0 {
					keys = append(keys, v)
				}
				count[v]++
			}
		}
	}
	if len(keys) == 0 && !kind.always {
		return
	}
	want := ""
	for _, k := range keys {
		if count[k] > count[want] {
			want = k
		}
	}
	for _, h := range domainHosts {
		i, ok := byName[h]
		if !ok {
			continue
		}
		v := kind.of(hosts[i])
		r := verify.CheckResult{ID: string(verify.CheckFirmwareDomain), Observed: kind.label + " " + orNone(v),
			Expected: fmt.Sprintf("%s of NVLink domain %q: %s (%d of %d hosts)", kind.label, name, orNone(want), count[want], len(domainHosts))}
		switch {
		case len(keys) == 0:
			r.Status, r.Message = verify.StatusSkip, "no host of the domain reports one VBIOS version for its GPUs: nothing to compare"
		case v == "":
			r.Status, r.Message = verify.StatusError, kind.missing
		case v != want:
			var others []string
			for _, k := range keys {
				if k != v {
					others = append(others, fmt.Sprintf("%s on %d", k, count[k]))
				}
			}
			r.Status = verify.StatusFail
			r.Message = fmt.Sprintf("%s %s drifts from the rest of NVLink domain %q (%s)", kind.label, v, name, strings.Join(others, ", "))
		default:
			r.Status = verify.StatusPass
		}
		hosts[i].Checks = append(hosts[i].Checks, r)
	}
}
