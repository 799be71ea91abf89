package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// NVLinkDomain is an nvlink_domain block: hosts of a node that share one
// NVLink domain (the trays of a GB200/GB300 NVL72 rack), which must run
// the same driver, Fabric Manager and IMEX releases and which a rollout
// with unit = "nvlink_domain" changes as one unit. Blocks of one name in
// several node blocks are one domain.
type NVLinkDomain struct {
	// Name is the block's label ("rack1").
	Name string
	// Hosts are the inventory names of the domain's hosts, in the node's
	// order: those the block's hosts lists, else every host of the node.
	Hosts []string
	// HostsSet is true when the block wrote hosts.
	HostsSet bool
	// HostsRange is where hosts is written (the block header when not).
	HostsRange hcl.Range
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
	// FromFabric is true for from = "fabric": the block's hosts are not
	// one domain but are grouped by the NVLink fabric each reports (the
	// GPUs' cluster UUID and clique id), read by plan from the node; a
	// host whose fabric is not up or cannot be read is in no domain, and
	// a rollout in domains refuses it.
	FromFabric bool
	// FromRange is where from is written.
	FromRange hcl.Range
}

// NVLinkDomainFromFabric is the from word that reads a domain from the
// node's NVLink fabric.
const NVLinkDomainFromFabric = "fabric"

// RolloutUnit is what a rollout's batch and failure budget count, as the
// rollout block's unit spells it.
type RolloutUnit string

// Rollout units; the rollout block's unit accepts these words.
const (
	// RolloutUnitHost counts hosts (the default).
	RolloutUnitHost RolloutUnit = "host"
	// RolloutUnitNVLinkDomain counts NVLink domains: a batch is whole
	// domains and never part of one, the failure budget is in domains.
	RolloutUnitNVLinkDomain RolloutUnit = "nvlink_domain"
)

var nvlinkDomainSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "hosts"}, {Name: "from"}}}

// nvlinkDomainNamePattern keeps a domain's name a word plans and reports
// can print without quoting.
var nvlinkDomainNamePattern = deviceNamePattern

func decodeNVLinkDomain(blk *hcl.Block, ctx *hcl.EvalContext, nodeHosts []Host) (*NVLinkDomain, hcl.Diagnostics) {
	d := &NVLinkDomain{Name: blk.Labels[0], DeclRange: blk.DefRange, HostsRange: blk.DefRange}
	var diags hcl.Diagnostics
	if !nvlinkDomainNamePattern.MatchString(d.Name) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid NVLink domain name",
			Detail:   fmt.Sprintf("nvlink_domain %q: a domain's name is letters, digits, '.', '_' or '-', at most 32 characters (\"rack1\").", d.Name),
			Subject:  blk.LabelRanges[0].Ptr(),
		})
	}
	content, cd := blk.Body.Content(nvlinkDomainSchema)
	diags = append(diags, cd...)
	if a, ok := content.Attributes["from"]; ok {
		d.FromRange = a.Expr.Range()
		v, vd := a.Expr.Value(ctx)
		diags = append(diags, vd...)
		switch {
		case vd.HasErrors():
		case v.IsNull() || !v.IsKnown() || v.Type() != cty.String || v.AsString() != NVLinkDomainFromFabric:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid NVLink domain source",
				Detail:   fmt.Sprintf("nvlink_domain %q: from takes \"fabric\" (group the hosts by the NVLink fabric cluster and clique their GPUs report); leave it out to make the hosts one domain.", d.Name),
				Subject:  a.Expr.Range().Ptr(),
			})
		default:
			d.FromFabric = true
		}
	}
	all := make([]string, len(nodeHosts))
	for i, h := range nodeHosts {
		all[i] = h.Name
	}
	a, ok := content.Attributes["hosts"]
	if !ok {
		d.Hosts = all
		return d, diags
	}
	d.HostsSet, d.HostsRange = true, a.Expr.Range()
	v, vd := a.Expr.Value(ctx)
	diags = append(diags, vd...)
	if vd.HasErrors() {
		return d, diags
	}
	hosts, hd := hostsFromValue(v, a.Expr)
	diags = append(diags, hd...)
	want := map[string]bool{}
	for _, h := range hosts {
		if !slices.Contains(all, h.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Host not in the node",
				Detail:   fmt.Sprintf("nvlink_domain %q lists %s, which is not one of this node block's hosts; a domain names hosts of the node it is written in.%s", d.Name, h.Name, didYouMeanNames(h.Name, all)),
				Subject:  a.Expr.Range().Ptr(),
			})
			continue
		}
		want[h.Name] = true
	}
	for _, h := range all {
		if want[h] {
			d.Hosts = append(d.Hosts, h)
		}
	}
	return d, diags
}

// checkNVLinkDomains reports a host in two domains of a node, and a
// rollout counted in domains over hosts that belong to none.
func checkNVLinkDomains(n *Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	in := map[string]string{}
	for _, d := range n.NVLinkDomains {
		for _, h := range d.Hosts {
			if prev, dup := in[h]; dup {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Host in two NVLink domains",
					Detail:   fmt.Sprintf("%s is in nvlink_domain %q and in %q; a host's GPUs belong to one NVLink domain.", h, prev, d.Name),
					Subject:  d.HostsRange.Ptr(),
				})
				continue
			}
			in[h] = d.Name
		}
	}
	if n.Rollout == nil || n.Rollout.Unit.V != RolloutUnitNVLinkDomain {
		return diags
	}
	var left []string
	for _, h := range n.Hosts {
		if _, ok := in[h.Name]; !ok {
			left = append(left, h.Name)
		}
	}
	if len(left) > 0 {
		detail := fmt.Sprintf("rollout { unit = \"nvlink_domain\" } changes whole NVLink domains, but %s %s in no nvlink_domain block of this node. Put every host in a domain (an nvlink_domain block without hosts takes all of the node's).", strings.Join(left, ", "), map[bool]string{true: "is", false: "are"}[len(left) == 1])
		if len(n.NVLinkDomains) == 0 {
			detail = "rollout { unit = \"nvlink_domain\" } changes whole NVLink domains, but this node declares none. Add nvlink_domain \"NAME\" { } (all of the node's hosts) or one block per rack with its hosts."
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Hosts outside every NVLink domain",
			Detail:   detail,
			Subject:  n.Rollout.Unit.Range.Ptr(),
		})
	}
	return diags
}

// FabricDomainBlock returns the nvlink_domain block read from the fabric
// (from = "fabric") that holds host, nil when none does.
func (n *Node) FabricDomainBlock(host string) *NVLinkDomain {
	for _, d := range n.NVLinkDomains {
		if d.FromFabric && slices.Contains(d.Hosts, host) {
			return d
		}
	}
	return nil
}

// NVLinkDomainOf returns the name of the node's NVLink domain host
// belongs to, "" when none.
func (n *Node) NVLinkDomainOf(host string) string {
	for _, d := range n.NVLinkDomains {
		if slices.Contains(d.Hosts, host) {
			return d.Name
		}
	}
	return ""
}

// Firmware is the firmware block: versions verify requires of the host's
// devices (gpuform installs no firmware).
type Firmware struct {
	// GPUVBIOS is the VBIOS version every GPU must report, as nvidia-smi
	// prints it ("96.00.89.00.01").
	GPUVBIOS Attr[string]
	// NICFirmware is the firmware every RDMA adapter must report, as
	// /sys/class/infiniband/DEV/fw_ver prints it ("28.43.1014").
	NICFirmware Attr[string]
	// BIOS is the system BIOS version the host must report, as
	// /sys/class/dmi/id/bios_version prints it (vendor-defined text).
	BIOS Attr[string]
	// BMC is the BMC firmware revision the host must report, as
	// ipmitool mc info prints it ("3.10": major.minor only).
	BMC Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

var (
	firmwareSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "gpu_vbios"}, {Name: "nic_firmware"}, {Name: "bios"}, {Name: "bmc"}}}
	vbiosVersionPattern = lazyre.New(`^[0-9A-Fa-f]{2}(\.[0-9A-Fa-f]{2}){3,5}$`)
	// bmcRevisionPattern is the Firmware Revision ipmitool mc info
	// prints: %u.%02x ("3.10", "0.00").
	bmcRevisionPattern = lazyre.New(`^[0-9]+\.[0-9a-f]{2}$`)
	// nicFirmwarePattern is ConnectX firmware as the mlx5 driver prints
	// it: major.minor.subminor ("28.43.1014").
	nicFirmwarePattern = lazyre.New(`^[0-9]+\.[0-9]+\.[0-9]+$`)
)

func decodeFirmware(blk *hcl.Block, ctx *hcl.EvalContext) (*Firmware, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, firmwareSchema, ctx)
	f := &Firmware{DeclRange: blk.DefRange}
	f.GPUVBIOS = dec.string("gpu_vbios")
	if f.GPUVBIOS.Set && !vbiosVersionPattern.MatchString(f.GPUVBIOS.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid VBIOS version",
			Detail:   fmt.Sprintf("gpu_vbios = %s is not a VBIOS version as nvidia-smi prints it (\"96.00.89.00.01\").", f.GPUVBIOS.Show()),
			Subject:  f.GPUVBIOS.Range.Ptr(),
		})
	}
	f.NICFirmware = dec.string("nic_firmware")
	if f.NICFirmware.Set && !nicFirmwarePattern.MatchString(f.NICFirmware.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid NIC firmware version",
			Detail:   fmt.Sprintf("nic_firmware = %s is not a firmware version as /sys/class/infiniband/DEV/fw_ver prints it (\"28.43.1014\").", f.NICFirmware.Show()),
			Subject:  f.NICFirmware.Range.Ptr(),
		})
	}
	f.BIOS = dec.string("bios")
	if f.BIOS.Set && (strings.TrimSpace(f.BIOS.V) != f.BIOS.V || f.BIOS.V == "" || strings.ContainsAny(f.BIOS.V, "\n\r")) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid BIOS version",
			Detail:   fmt.Sprintf("bios = %s must be the one-line text /sys/class/dmi/id/bios_version prints, without leading or trailing spaces.", f.BIOS.Show()),
			Subject:  f.BIOS.Range.Ptr(),
		})
	}
	f.BMC = dec.string("bmc")
	if f.BMC.Set && !bmcRevisionPattern.MatchString(f.BMC.V) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid BMC firmware revision",
			Detail:   fmt.Sprintf("bmc = %s is not a Firmware Revision as ipmitool mc info prints it (\"3.10\": major.minor, ipmitool shows no third part).", f.BMC.Show()),
			Subject:  f.BMC.Range.Ptr(),
		})
	}
	return f, dec.diags
}
