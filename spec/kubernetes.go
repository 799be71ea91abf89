package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// VerifyKubernetes is verify { kubernetes }: how verify -engine
// kubernetes runs the node side of verify on each node of this block (a
// Job pinned to the node, from Image).
type VerifyKubernetes struct {
	// Image is the container image with gpuform in it (required for
	// -engine kubernetes).
	Image Attr[string]
	// ServiceAccount is the Job's pod's service account, which writes
	// the node's report ConfigMap ("" is gpuform-verify-node, the one
	// gpuform kubernetes manifests -engine writes).
	ServiceAccount Attr[string]
	// PriorityClass is the pod's priorityClassName ("" is none).
	PriorityClass Attr[string]
	// Tolerations are the pod's tolerations, in kubectl taint syntax
	// (KEY[=VALUE][:EFFECT]).
	Tolerations []Toleration
	// NodeName maps a spec host to its Kubernetes node name: a template
	// of {host} and {short}; unset is {short}.
	NodeName Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Toleration is one of verify { kubernetes { tolerations } }.
type Toleration struct {
	// Key, Value and Effect are as written; Operator is Equal when a
	// value is given, else Exists; Effect "" tolerates every effect.
	Key, Operator, Value, Effect string
	// Range is where it is written.
	Range hcl.Range
}

var kubernetesSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "image", Required: true}, {Name: "service_account"}, {Name: "priority_class"}, {Name: "tolerations"}, {Name: "node_name"},
}}

var (
	// dnsSubdomain is a Kubernetes object name (RFC 1123 subdomain).
	dnsSubdomain = lazyre.New(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// taintKey is a label-style key: an optional DNS prefix and a name.
	taintKey   = lazyre.New(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	taintValue = lazyre.New(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// decodeKubernetes reads verify { kubernetes }; each bad value is an
// error at its own line.
func decodeKubernetes(blk *hcl.Block, ctx *hcl.EvalContext) (*VerifyKubernetes, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, kubernetesSchema, ctx)
	k := &VerifyKubernetes{DeclRange: blk.DefRange}
	bad := func(summary string, r hcl.Range, format string, args ...any) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: r.Ptr()})
	}
	k.Image = dec.string("image")
	if k.Image.Set && (len(k.Image.V) > 512 || !imagePattern.MatchString(k.Image.V)) {
		bad("Invalid kubernetes image", k.Image.Range, "%s is not a container image reference (registry/name:tag, or with @sha256:…, as the spec's other images are written).", k.Image.Show())
		k.Image.Set = false
	}
	for _, name := range []string{"service_account", "priority_class"} {
		a := dec.string(name)
		if a.Set && (len(a.V) > 253 || !dnsSubdomain.MatchString(a.V)) {
			bad("Invalid kubernetes "+name, a.Range, "%s is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253).", a.Show())
			a.Set = false
		}
		if name == "service_account" {
			k.ServiceAccount = a
		} else {
			k.PriorityClass = a
		}
	}
	list, _ := dec.stringList("tolerations")
	for _, a := range list {
		t, err := ParseToleration(a.V)
		if err != nil {
			bad("Invalid kubernetes toleration", a.Range, "%s: %v.", a.Show(), err)
			continue
		}
		t.Range = a.Range
		k.Tolerations = append(k.Tolerations, t)
	}
	k.NodeName = dec.string("node_name")
	if k.NodeName.Set {
		if _, err := KubeNodeName(k.NodeName.V, "gpu001.example.com"); err != nil {
			bad("Invalid kubernetes node_name", k.NodeName.Range, "%v.", err)
			k.NodeName.Set = false
		}
	}
	return k, dec.diags
}

// taintEffects are the effects a toleration may name.
var taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// ParseToleration reads a toleration in kubectl taint syntax:
// KEY[=VALUE][:EFFECT]; no value tolerates every value (Exists), no
// effect every effect.
func ParseToleration(s string) (Toleration, error) {
	rest, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	t := Toleration{Key: key, Value: value, Effect: effect, Operator: "Exists"}
	if hasValue {
		t.Operator = "Equal"
	}
	switch {
	case len(key) > 316 || !taintKey.MatchString(key):
		return t, fmt.Errorf("%q is not a taint key (KEY[=VALUE][:EFFECT], a key like nvidia.com/gpu)", key)
	case hasValue && (len(value) > 63 || !taintValue.MatchString(value)):
		return t, fmt.Errorf("%q is not a taint value", value)
	case hasEffect && !containsString(taintEffects, effect):
		return t, fmt.Errorf("the effect %q is not one of %s", effect, strings.Join(taintEffects, ", "))
	}
	return t, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// KubeNodeName applies a verify { kubernetes { node_name } } template
// ("" is {short}) to an inventory host: {host} is the host as written
// (without a scheme), {short} its first label. A Kubernetes node name is
// a lowercase RFC 1123 subdomain.
func KubeNodeName(template, host string) (string, error) {
	if template == "" {
		template = "{short}"
	}
	full := host
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		full = full[i+1:]
	}
	short, _, _ := strings.Cut(full, ".")
	rest := strings.NewReplacer("{host}", "", "{short}", "").Replace(template)
	if strings.ContainsAny(rest, "{}") {
		return "", fmt.Errorf("%q: only {host} and {short} may appear in braces", template)
	}
	name := strings.NewReplacer("{host}", full, "{short}", short).Replace(template)
	if len(name) > 253 || !dnsSubdomain.MatchString(name) {
		return "", fmt.Errorf("%q gives %q for host %s, which is not a Kubernetes node name (lowercase letters, digits, '-' and '.')", template, name, host)
	}
	return name, nil
}
