package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var inventoryBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "hosts", Required: true},
		{Name: "user"},
		{Name: "port"},
		{Name: "jump"},
		{Name: "become"},
		{Name: "probe_timeout"},
	},
}

// evalInventory decodes an inventory block and returns the value that
// inventory.NAME stands for: an object with the expanded hosts and the
// connection settings, which a node's hosts attribute accepts.
func (e *evaluator) evalInventory(b *hcl.Block) (*Inventory, cty.Value, hcl.Diagnostics) {
	inv := &Inventory{Name: b.Labels[0], DeclRange: b.DefRange}
	content, diags := b.Body.Content(inventoryBlockSchema)
	ctx, d := e.bodyContext(content.Attributes)
	diags = append(diags, d...)
	dec := &attrDecoder{ctx: ctx, attrs: content.Attributes, block: b.DefRange, schema: inventoryBlockSchema}
	patterns, _ := dec.stringList("hosts")
	inv.User = dec.string("user")
	inv.Port = dec.int("port", 1, 65535)
	inv.Jump = dec.string("jump")
	inv.Become = dec.enum("become", "sudo", "")
	var bad *hcl.Diagnostic
	if inv.ProbeTimeout, bad = checkTimeout(dec.string("probe_timeout"), "probe_timeout", "2m"); bad != nil {
		dec.diags = append(dec.diags, bad)
	}
	diags = append(diags, dec.diags...)
	// Connection settings are printed (plans, reports, ssh errors), so
	// none may be sensitive; one that is invalid anyway gets that error.
	var kept []Attr[string]
	for _, p := range patterns {
		if p.Sensitive {
			diags = append(diags, sensitiveNotAllowedDiag("This host", p.Range))
			continue
		}
		kept = append(kept, p)
	}
	patterns = kept
	if inv.User.Set {
		if d := checkUserName(inv.User); d != nil {
			diags = append(diags, d)
		} else if inv.User.Sensitive {
			diags = append(diags, sensitiveNotAllowedDiag("The user", inv.User.Range))
		}
		if inv.User.Sensitive {
			inv.User = Attr[string]{Range: inv.User.Range}
		}
	}
	for _, a := range []*Attr[string]{&inv.Jump, &inv.Become} {
		if a.Set && a.Sensitive {
			diags = append(diags, sensitiveNotAllowedDiag("This connection setting", a.Range))
			*a = Attr[string]{Range: a.Range}
		}
	}
	if inv.Port.Set && inv.Port.Sensitive {
		diags = append(diags, sensitiveNotAllowedDiag("The port", inv.Port.Range))
		inv.Port = Attr[int]{Range: inv.Port.Range}
	}
	if inv.Jump.Set {
		for _, hop := range strings.Split(inv.Jump.V, ",") {
			if err := checkHostName(strings.TrimSpace(hop)); err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid jump host",
					Detail:   err.Error() + ". jump takes a host or a comma-separated chain, like ProxyJump.",
					Subject:  inv.Jump.Range.Ptr(),
				})
			}
		}
	}
	hosts, d := expandHostAttrs(patterns)
	diags = append(diags, d...)
	inv.Hosts = hosts

	names := make([]cty.Value, len(hosts))
	for i, h := range hosts {
		names[i] = cty.StringVal(h.V)
	}
	list := cty.ListValEmpty(cty.String)
	if len(names) > 0 {
		list = cty.ListVal(names)
	}
	val := cty.ObjectVal(map[string]cty.Value{
		"name":   cty.StringVal(inv.Name),
		"hosts":  list,
		"user":   cty.StringVal(inv.User.V),
		"port":   cty.NumberIntVal(int64(inv.Port.V)),
		"jump":   cty.StringVal(inv.Jump.V),
		"become": cty.StringVal(inv.Become.V),
		// probe_timeout is "" when unset or invalid: the command's
		// limit applies.
		"probe_timeout": cty.StringVal(inv.ProbeTimeout.V.Text),
	})
	return inv, val, diags
}

// expandHostAttrs expands host patterns, each expanded host keeping the
// range of the pattern it came from, and reports duplicates.
func expandHostAttrs(patterns []Attr[string]) ([]Attr[string], hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []Attr[string]
	seen := map[string]hcl.Range{}
	for _, p := range patterns {
		hosts, err := ExpandHostPattern(p.V)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid host pattern",
				Detail:   err.Error() + ". Host ranges are written like \"gpu[001-032].dc1.example.com\" or \"gpu[1-4,7]\".",
				Subject:  p.Range.Ptr(),
			})
			continue
		}
		for _, h := range hosts {
			if prev, dup := seen[h]; dup {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate host",
					Detail:   fmt.Sprintf("Host %q is listed more than once; it was first listed at %s.", h, prev),
					Subject:  p.Range.Ptr(),
				})
				continue
			}
			seen[h] = p.Range
			out = append(out, Attr[string]{V: h, Set: true, Range: p.Range})
		}
	}
	return out, diags
}

func checkUserName(u Attr[string]) *hcl.Diagnostic {
	ok := u.V != "" && len(u.V) <= 32
	for i, r := range u.V {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || (i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.'))) {
			ok = false
		}
	}
	if ok {
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid user name",
		Detail:   fmt.Sprintf("%s is not a valid login name.", u.Show()),
		Subject:  u.Range.Ptr(),
	}
}
