package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// The JSON plan, as written by RenderJSON:
//
//	{
//	  "format_version": "2.4",
//	  "applyable": bool,        // some host changes and none failed to plan
//	  "errored": bool,          // some host could not be probed or planned
//	  "hosts": [{
//	    "host": "gpu001", "node": "h100",
//	    "facts_fingerprint": "sha256 hex",   // omitted for a host that failed
//	    "error": "…",                        // omitted when planned
//	    "warnings": ["…"],                   // omitted when none
//	    "images": [{                         // NGC images with a warning or an error; omitted when none
//	      "image": "nvcr.io/nvidia/pytorch:25.02-py3",
//	      "severity": "error" | "warning",
//	      "driver": "535.183.06", "driver_from": "planned" | "loaded",
//	      "gpu": "H100 SXM5 80GB (HGX/DGX H100)",   // omitted when not known
//	      "gpu_class": "data-center GPU",
//	      "message": "…", "source": "https://…"
//	    }],
//	    "resource_changes": [{
//	      "resource": "driver_package",
//	      "actions": ["create" | "update" | "delete" | "no-op"],
//	      "before": {attr: value} | null,    // the live value; null when absent
//	      "after":  {attr: value} | null,    // the desired value; null when deleted
//	      "before_sensitive": {attr: true},  // attributes hidden as "(sensitive value)"
//	      "after_sensitive":  {attr: true},
//	      "reboot_required": bool, "reboot_pending": bool, "pending_reason": "580.95.05 installed, 550.90.07 loaded",
//	    "slurm": {"node": "gpu001", "state": "IDLE", "reason": "…",
//	              "action": "drain" | "skip" | "change-keep-drained" | "resume" | "none", "error": "…"},
//	      "restarts": [unit], "downgrades": ["pkg old -> new"], "depends_on": [resource],
//	      "version_from": "580",             // 2.3: the floating version after.version was resolved from
//	      "releases": {"cuda-drivers-580": "580.95.05-1"},  // 2.3: exact versions apply installs, resolved
//	                                         // against the host's repositories; a saved plan pins them
//	      "version_unresolved": "…"          // 2.3: why a floating version has no release yet
//	    }],
//	    "reboot_required": bool, "reboot_pending": bool,
//	    "slurm": {"node": "gpu001", "state": "IDLE", "reason": "…",
//	              "action": "drain" | "skip" | "change-keep-drained" | "resume" | "none", "error": "…"},
//	    "summary": {"add": n, "change": n, "destroy": n}
//	  }],
//	  "nodes": [{"name": "h100", "hosts": [...], "batch": n, "max_failures": n,
//	             "reboot": "allow" | "never", "drain": "slurm", "step_timeout": "45m",
//	             "drain_timeout": "2h", "drain_poll": "30s", "foreign_drain": "skip" | "change",
//	             "slurm_node_name": "{short}", "slurm_client": "login1"}],
//	  "summary": {"add": n, "change": n, "destroy": n}
//	}
//
// An attribute value is a JSON boolean or number when the resource made
// it as one (resource.BoolVal, resource.NumberVal: "held": true, hugepages
// "count": 512) and its text reads as one; otherwise, and always for a
// sensitive value, it is a string. Reading a plan file back gives each
// value the kind its JSON type says, so the same document comes out.

// planJSON is the JSON plan document.
type planJSON struct {
	FormatVersion string        `json:"format_version"`
	Applyable     bool          `json:"applyable"`
	Errored       bool          `json:"errored"`
	Hosts         []*hostJSON   `json:"hosts"`
	Nodes         []rolloutJSON `json:"nodes"`
	Summary       Summary       `json:"summary"`
}

type rolloutJSON struct {
	Name          string                  `json:"name"`
	Hosts         []string                `json:"hosts"`
	Batch         int                     `json:"batch"`
	MaxFailures   int                     `json:"max_failures"`
	Reboot        spec.RebootPolicy       `json:"reboot"`
	Drain         spec.DrainMode          `json:"drain,omitempty"`
	StepTimeout   string                  `json:"step_timeout,omitempty"`
	DrainTimeout  string                  `json:"drain_timeout,omitempty"`
	DrainPoll     string                  `json:"drain_poll,omitempty"`
	ForeignDrain  spec.ForeignDrainPolicy `json:"foreign_drain,omitempty"`
	SlurmNodeName string                  `json:"slurm_node_name,omitempty"`
	SlurmClient   string                  `json:"slurm_client,omitempty"`
	Unit          spec.RolloutUnit        `json:"unit,omitempty"`
	Domains       []RolloutDomain         `json:"nvlink_domains,omitempty"`
}

type hostJSON struct {
	Host             string               `json:"host"`
	Node             string               `json:"node"`
	FactsFingerprint string               `json:"facts_fingerprint,omitempty"`
	Error            string               `json:"error,omitempty"`
	Warnings         []string             `json:"warnings,omitempty"`
	VerifyNotes      []string             `json:"verify_notes,omitempty"`
	Images           []imageJSON          `json:"images,omitempty"`
	ResourceChanges  []resourceChangeJSON `json:"resource_changes"`
	RebootRequired   bool                 `json:"reboot_required"`
	RebootPending    bool                 `json:"reboot_pending"`
	Slurm            *SlurmPlan           `json:"slurm,omitempty"`
	Summary          Summary              `json:"summary"`
}

type imageJSON struct {
	Image      string        `json:"image"`
	Severity   ImageSeverity `json:"severity"`
	Driver     string        `json:"driver"`
	DriverFrom DriverFrom    `json:"driver_from"`
	GPU        string        `json:"gpu,omitempty"`
	GPUClass   string        `json:"gpu_class"`
	Message    string        `json:"message"`
	Source     string        `json:"source,omitempty"`
}

type resourceChangeJSON struct {
	Resource        string                     `json:"resource"`
	Path            string                     `json:"path,omitempty"`
	Actions         []string                   `json:"actions"`
	Before          map[string]json.RawMessage `json:"before"`
	After           map[string]json.RawMessage `json:"after"`
	BeforeSensitive map[string]bool            `json:"before_sensitive,omitempty"`
	AfterSensitive  map[string]bool            `json:"after_sensitive,omitempty"`
	RebootRequired  bool                       `json:"reboot_required"`
	RebootPending   bool                       `json:"reboot_pending,omitempty"`
	PendingReason   string                     `json:"pending_reason,omitempty"`
	Restarts        []string                   `json:"restarts,omitempty"`
	Downgrades      []string                   `json:"downgrades,omitempty"`
	DependsOn       []string                   `json:"depends_on,omitempty"`
	VersionFrom     string                     `json:"version_from,omitempty"`
	Releases        map[string]string          `json:"releases,omitempty"`
	Unresolved      string                     `json:"version_unresolved,omitempty"`
}

// RenderJSON writes the plan as one JSON document (the -json output).
func RenderJSON(w io.Writer, p *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(p)
}

// MarshalJSON writes the plan as the JSON document above.
func (p *Plan) MarshalJSON() ([]byte, error) {
	doc := planJSON{FormatVersion: jsonformat.Version, Applyable: p.Applyable, Errored: p.Errored, Hosts: make([]*hostJSON, len(p.Hosts)), Nodes: make([]rolloutJSON, len(p.Nodes)), Summary: p.Summary}
	for i, h := range p.Hosts {
		doc.Hosts[i] = h.toJSON()
	}
	for i, n := range p.Nodes {
		doc.Nodes[i] = n.toJSON()
	}
	return json.Marshal(doc)
}

// UnmarshalJSON reads the JSON document back (a plan file): hosts carry
// names, not their spec node or facts.
func (p *Plan) UnmarshalJSON(b []byte) error {
	var doc planJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	*p = Plan{Applyable: doc.Applyable, Errored: doc.Errored, Summary: doc.Summary, Nodes: make([]NodeRollout, len(doc.Nodes))}
	for i, n := range doc.Nodes {
		r, err := n.toModel()
		if err != nil {
			return err
		}
		p.Nodes[i] = r
	}
	for _, hj := range doc.Hosts {
		if hj == nil {
			p.Hosts = append(p.Hosts, nil)
			continue
		}
		h, err := hj.toModel()
		if err != nil {
			return err
		}
		p.Hosts = append(p.Hosts, h)
	}
	return nil
}

func (n NodeRollout) toJSON() rolloutJSON {
	return rolloutJSON{Name: n.Name, Hosts: n.Hosts, Batch: n.Batch, MaxFailures: n.MaxFailures, Reboot: n.Reboot, Drain: n.Drain,
		StepTimeout: n.StepTimeout.Text, DrainTimeout: n.DrainTimeout.Text, DrainPoll: n.DrainPoll.Text,
		ForeignDrain: n.ForeignDrain, SlurmNodeName: n.SlurmNodeName, SlurmClient: n.SlurmClient,
		Unit: n.Unit, Domains: n.Domains}
}

// toModel reads a node's rollout back, its timeouts parsed once here: a
// plan file whose timeout apply could not use is refused, not run with
// the default in its place.
func (rj rolloutJSON) toModel() (NodeRollout, error) {
	n := NodeRollout{Name: rj.Name, Hosts: rj.Hosts, Batch: rj.Batch, MaxFailures: rj.MaxFailures, Reboot: rj.Reboot, Drain: rj.Drain,
		ForeignDrain: rj.ForeignDrain, SlurmNodeName: rj.SlurmNodeName, SlurmClient: rj.SlurmClient,
		Unit: rj.Unit, Domains: rj.Domains}
	if err := checkDomains(n); err != nil {
		return n, &FileValueError{Node: rj.Name, Attr: "nvlink_domains", Err: err}
	}
	for _, t := range []struct {
		name string
		text string
		to   *spec.Duration
	}{{"step_timeout", rj.StepTimeout, &n.StepTimeout}, {"drain_timeout", rj.DrainTimeout, &n.DrainTimeout}, {"drain_poll", rj.DrainPoll, &n.DrainPoll}} {
		if t.text == "" {
			continue
		}
		d, err := spec.ParseTimeout(t.text)
		if err != nil {
			return n, &FileValueError{Node: rj.Name, Attr: t.name, Err: err}
		}
		*t.to = d
	}
	return n, nil
}

// FileValueError is a value in a plan file that gpuform would not have
// written (a node's step_timeout that is no duration): the file was
// edited or damaged, and apply refuses it rather than guess.
type FileValueError struct {
	// Node is the node block the value belongs to.
	Node string
	// Attr is the value's name in the plan JSON ("step_timeout").
	Attr string
	// Err says what is wrong with it.
	Err error
}

func (e *FileValueError) Error() string {
	return fmt.Sprintf("node %s: %s: %v", e.Node, e.Attr, e.Err)
}

func (e *FileValueError) Unwrap() error { return e.Err }

// checkDomains refuses a rollout in domains that apply could not walk
// whole: an unknown unit, or a host of the node in no domain or in two,
// or a domain host that is not the node's.
func checkDomains(n NodeRollout) error {
	switch n.Unit {
	case "", spec.RolloutUnitHost:
		if len(n.Domains) > 0 {
			return fmt.Errorf("domains given for a rollout that counts hosts")
		}
		return nil
	case spec.RolloutUnitNVLinkDomain:
	default:
		return fmt.Errorf("unit %q is not %q or %q", n.Unit, spec.RolloutUnitHost, spec.RolloutUnitNVLinkDomain)
	}
	in := map[string]string{}
	for _, d := range n.Domains {
		for _, h := range d.Hosts {
			if !slices.Contains(n.Hosts, h) {
				return fmt.Errorf("domain %q names %s, which is not a host of the node", d.Name, h)
			}
			if prev, dup := in[h]; dup {
				return fmt.Errorf("%s is in domain %q and %q", h, prev, d.Name)
			}
			in[h] = d.Name
		}
	}
	for _, h := range n.Hosts {
		if _, ok := in[h]; !ok {
			return fmt.Errorf("%s is in no domain of a rollout in NVLink domains", h)
		}
	}
	return nil
}

func (h *HostPlan) toJSON() *hostJSON {
	out := &hostJSON{Host: h.Host, Node: h.Node, FactsFingerprint: h.FactsFingerprint, Error: h.Error, Warnings: h.Warnings, VerifyNotes: h.VerifyNotes,
		ResourceChanges: make([]resourceChangeJSON, len(h.ResourceChanges)), RebootRequired: h.RebootRequired, RebootPending: h.RebootPending, Slurm: h.Slurm, Summary: h.Summary}
	for i, rc := range h.ResourceChanges {
		out.ResourceChanges[i] = rc.toJSON()
	}
	for _, v := range h.Images {
		out.Images = append(out.Images, imageJSON(v))
	}
	return out
}

func (hj *hostJSON) toModel() (*HostPlan, error) {
	h := &HostPlan{Host: hj.Host, Node: hj.Node, FactsFingerprint: hj.FactsFingerprint, Error: hj.Error, Warnings: hj.Warnings, VerifyNotes: hj.VerifyNotes,
		ResourceChanges: make([]ResourceChange, len(hj.ResourceChanges)), RebootRequired: hj.RebootRequired, RebootPending: hj.RebootPending, Slurm: hj.Slurm, Summary: hj.Summary}
	for _, v := range hj.Images {
		h.Images = append(h.Images, ImageVerdict(v))
	}
	for i, rj := range hj.ResourceChanges {
		rc, err := rj.toModel()
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", hj.Host, err)
		}
		h.ResourceChanges[i] = rc
	}
	return h, nil
}

func (rc ResourceChange) toJSON() resourceChangeJSON {
	out := resourceChangeJSON{Resource: rc.Resource, Path: rc.Path, Actions: []string{rc.Action.String()}, RebootRequired: rc.RebootRequired,
		RebootPending: rc.RebootPending, PendingReason: rc.PendingReason, Restarts: rc.Restarts, Downgrades: rc.Downgrades, DependsOn: rc.DependsOn,
		VersionFrom: rc.VersionFrom, Releases: rc.Releases, Unresolved: rc.Unresolved}
	// A create has nothing before it (Terraform's "before": null): a
	// probe's reading of an absent resource, all empty values, is no
	// state. A "create" that replaces live values keeps them; it reads as
	// an update.
	if rc.Action != resource.Create || !allEmpty(rc.Before) {
		out.Before, out.BeforeSensitive = attrsJSON(rc.Before)
	}
	out.After, out.AfterSensitive = attrsJSON(rc.After)
	return out
}

func (rj resourceChangeJSON) toModel() (ResourceChange, error) {
	rc := ResourceChange{Change: resource.Change{Resource: rj.Resource, Path: rj.Path, RebootRequired: rj.RebootRequired, RebootPending: rj.RebootPending,
		PendingReason: rj.PendingReason, Restarts: rj.Restarts, Downgrades: rj.Downgrades, DependsOn: rj.DependsOn,
		VersionFrom: rj.VersionFrom, Releases: rj.Releases, Unresolved: rj.Unresolved}}
	if len(rj.Actions) > 0 {
		a, ok := resource.ParseAction(rj.Actions[0])
		if !ok {
			return rc, fmt.Errorf("resource %s: unknown action %q", rj.Resource, rj.Actions[0])
		}
		rc.Action = a
	}
	var err error
	if rc.Before, err = attrsModel(rj.Before, rj.BeforeSensitive); err != nil {
		return rc, fmt.Errorf("resource %s: %w", rj.Resource, err)
	}
	if rc.After, err = attrsModel(rj.After, rj.AfterSensitive); err != nil {
		return rc, fmt.Errorf("resource %s: %w", rj.Resource, err)
	}
	return rc, nil
}

// attrsJSON writes attributes as JSON values, and names the sensitive ones.
// allEmpty reports whether no attribute of m has a value.
func allEmpty(m Attrs) bool {
	for _, v := range m {
		if v.Text != "" || v.Sensitive {
			return false
		}
	}
	return true
}

func attrsJSON(m Attrs) (map[string]json.RawMessage, map[string]bool) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(m))
	var sens map[string]bool
	for k, v := range m {
		out[k] = valueJSON(v)
		if v.Sensitive {
			if sens == nil {
				sens = map[string]bool{}
			}
			sens[k] = true
		}
	}
	return out, sens
}

// valueJSON is v as a JSON boolean or number when it is one, else a string.
func valueJSON(v Value) json.RawMessage {
	if !v.Sensitive {
		switch v.Kind {
		case resource.Bool:
			if b, err := strconv.ParseBool(v.Text); err == nil && (v.Text == "true" || v.Text == "false") {
				return json.RawMessage(strconv.FormatBool(b))
			}
		case resource.Number:
			if n, err := strconv.ParseInt(v.Text, 10, 64); err == nil && strconv.FormatInt(n, 10) == v.Text {
				return json.RawMessage(v.Text)
			}
		}
	}
	// As RenderJSON, leave <, > and & as they are (json.Marshal would
	// escape them, and the encoder keeps a raw value's escapes).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v.Text) // a string always encodes
	return bytes.TrimRight(b.Bytes(), "\n")
}

// attrsModel reads JSON attribute values back into typed values.
func attrsModel(m map[string]json.RawMessage, sens map[string]bool) (Attrs, error) {
	if m == nil {
		return nil, nil
	}
	out := make(Attrs, len(m))
	for k, raw := range m {
		v := Value{Sensitive: sens[k]}
		raw = bytes.TrimSpace(raw)
		switch {
		case bytes.Equal(raw, []byte("true")), bytes.Equal(raw, []byte("false")):
			v.Value = resource.BoolVal(string(raw) == "true")
		case len(raw) > 0 && raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("attribute %s: %w", k, err)
			}
			v.Value = resource.StringVal(s)
		default:
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: not a string, boolean or integer: %s", k, raw)
			}
			v.Value = resource.NumberVal(n)
		}
		out[k] = v
	}
	return out, nil
}
