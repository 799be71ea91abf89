package plan

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// recordsWritten returns the owner records own's changes write, nil when
// they write none.
func recordsWritten(t *testing.T, out []ResourceChange) *facts.Owners {
	t.Helper()
	for _, rc := range out {
		for _, st := range rc.Steps {
			if strings.HasPrefix(st.Description, "record the owner") {
				o := facts.ParseOwners([]byte(st.Input))
				if o.Error != "" {
					t.Fatalf("written records: %s\n%s", o.Error, st.Input)
				}
				return o
			}
		}
	}
	return nil
}

func attrsOf(kv ...string) Attrs {
	out := Attrs{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = Value{Value: resource.StringVal(kv[i+1])}
	}
	return out
}

// keyedChange is a sysctl change declaring declared on a file holding
// inFile.
func keyedChange(action resource.Action, declared, inFile []string, before, after Attrs) ResourceChange {
	return ResourceChange{
		Change: resource.Change{Resource: resource.Sysctl, Action: action, Keys: &resource.KeyedFile{Declared: declared, InFile: inFile, WholeFileRecord: true}},
		Before: before, After: after,
	}
}

// ncclChange is keyedChange for nccl_conf, a file shared with the
// operator.
func ncclChange(action resource.Action, declared, inFile []string, before, after Attrs) ResourceChange {
	rc := keyedChange(action, declared, inFile, before, after)
	rc.Resource = resource.NCCLConf
	rc.Keys.WholeFileRecord = false
	return rc
}

// TestOwnKeys: own applies the ownership rules key by key to a keyed
// resource (issue 30 item 6): specs share its file, the same key in two
// specs is an error naming the key and the spec, and a record of the
// whole resource from before key records keeps its keys.
func TestOwnKeys(t *testing.T) {
	a := facts.OwnerRecord{Spec: "a", Source: "git@example.com:fleet.git//a"}
	keyRecs := func(kv ...string) *facts.Owners {
		o := &facts.Owners{Resources: map[string]facts.OwnerRecord{}, Keys: map[string]map[string]facts.OwnerRecord{resource.Sysctl: {}}}
		for i := 0; i+1 < len(kv); i += 2 {
			o.Keys[resource.Sysctl][kv[i]] = facts.OwnerRecord{Spec: kv[i+1]}
		}
		return o
	}
	legacy := &facts.Owners{Resources: map[string]facts.OwnerRecord{resource.Sysctl: a}}
	ncclLegacy := func(spec string) *facts.Owners {
		return &facts.Owners{Resources: map[string]facts.OwnerRecord{resource.NCCLConf: {Spec: spec}}}
	}
	tests := map[string]struct {
		owners *facts.Owners
		change ResourceChange
		// legacyKept is true when the whole-resource record stays.
		legacyKept bool
		takeOver   bool
		// err is part of the error; "" for none.
		err string
		// records are the sysctl key records written (key -> spec); nil
		// when nothing is written.
		records map[string]string
		// managedBy is the ManagedBy change shown, "from -> to"; "" none.
		managedBy string
		// dropped is true when the change is left out of the plan.
		dropped bool
	}{
		"adds a key next to another spec's": {
			owners:  keyRecs("x", "a"),
			change:  keyedChange(resource.Update, []string{"z"}, []string{"x"}, attrsOf(), attrsOf("z", "1")),
			records: map[string]string{"x": "a", "z": "b"},
		},
		"declares another spec's key": {
			owners: keyRecs("x", "a", "y", "a"),
			change: keyedChange(resource.Update, []string{"x", "z"}, []string{"x", "y"}, attrsOf("x", "1"), attrsOf("x", "2", "z", "1")),
			err:    `sysctl key x is managed by spec "a"`,
		},
		"takes a key over": {
			owners: keyRecs("x", "a", "y", "a"), takeOver: true,
			change:    keyedChange(resource.Update, []string{"x"}, []string{"x", "y"}, attrsOf("x", "1"), attrsOf("x", "2")),
			records:   map[string]string{"x": "b", "y": "a"},
			managedBy: "a -> b",
		},
		"drops its key, keeps the other spec's": {
			owners:  keyRecs("x", "a", "z", "b"),
			change:  keyedChange(resource.Update, nil, []string{"x", "z"}, attrsOf("z", "1"), attrsOf()),
			records: map[string]string{"x": "a"},
		},
		"adopts a key found without a record": {
			change:    keyedChange(resource.Update, []string{"x"}, nil, attrsOf("x", "60"), attrsOf("x", "1")),
			records:   map[string]string{"x": "b"},
			managedBy: "(no record) -> b",
		},
		"a whole-resource record keeps the keys its file holds": {
			owners:  legacy,
			change:  keyedChange(resource.Update, []string{"z"}, []string{"x", "y"}, attrsOf(), attrsOf("z", "1")),
			records: map[string]string{"x": "a", "y": "a", "z": "b"},
		},
		"a whole-resource record's key is refused too": {
			owners: legacy,
			change: keyedChange(resource.Update, []string{"y"}, []string{"x", "y"}, attrsOf("y", "1"), attrsOf("y", "2")),
			err:    `sysctl key y is managed by spec "a" (applied from git@example.com:fleet.git//a)`,
		},
		"the file goes only when every key in it is this spec's": {
			owners:  keyRecs("x", "b", "z", "a"),
			change:  keyedChange(resource.Delete, nil, []string{"x", "z"}, attrsOf("x", "1"), nil),
			dropped: true,
		},
		"its own file goes": {
			owners:  keyRecs("x", "b", "z", "a"),
			change:  keyedChange(resource.Delete, nil, []string{"x"}, attrsOf("x", "1"), nil),
			records: map[string]string{"z": "a"},
		},
		// nccl.conf is shared with the operator: an old record of the
		// whole file keeps other specs off gpuform's keys in it, but
		// gives none of them to its spec to remove.
		"an old record of a shared file refuses another spec its keys": {
			owners: ncclLegacy("a"),
			change: ncclChange(resource.Update, []string{"NCCL_IB_HCA"}, []string{"NCCL_IB_HCA"}, attrsOf("NCCL_IB_HCA", "mlx5_0"), attrsOf("NCCL_IB_HCA", "mlx5_1")),
			err:    `nccl_conf key NCCL_IB_HCA is managed by spec "a"`,
		},
		"an old record of a shared file stays when another spec adds a key": {
			owners:     ncclLegacy("a"),
			change:     ncclChange(resource.Update, []string{"NCCL_SOCKET_IFNAME"}, []string{"NCCL_IB_HCA"}, attrsOf(), attrsOf("NCCL_SOCKET_IFNAME", "^lo")),
			records:    map[string]string{"NCCL_SOCKET_IFNAME": "b"},
			legacyKept: true,
		},
		"an old record of a shared file, applied by its spec, records only what it declares": {
			owners:  ncclLegacy("b"),
			change:  ncclChange(resource.Update, []string{"NCCL_IB_HCA"}, []string{"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"}, attrsOf("NCCL_IB_HCA", "mlx5_0"), attrsOf("NCCL_IB_HCA", "mlx5_1")),
			records: map[string]string{"NCCL_IB_HCA": "b"},
		},
		"converged: nothing written": {
			owners: keyRecs("x", "b"),
			change: keyedChange(resource.NoOp, []string{"x"}, []string{"x"}, attrsOf("x", "1"), attrsOf("x", "1")),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := spec.Owner{Spec: "b"}
			res := tc.change.Resource
			if tc.takeOver {
				o.TakeOver = []string{res}
			}
			out, err := own(o, []ResourceChange{tc.change}, &facts.Node{Owners: tc.owners})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "-take-over "+res) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.dropped != (len(out) == 0) {
				t.Fatalf("changes %v, want dropped %v", out, tc.dropped)
			}
			got := recordsWritten(t, out)
			switch {
			case tc.records == nil && got != nil:
				t.Errorf("records written although nothing changes hands: %+v", got)
			case tc.records != nil && got == nil:
				t.Fatalf("no records written, want %v", tc.records)
			case tc.records != nil:
				if _, ok := got.Resources[res]; ok != tc.legacyKept {
					t.Errorf("the whole-resource record of %s written: %v, want %v (%+v)", res, ok, tc.legacyKept, got.Resources)
				}
				keys := got.Keys[res]
				if len(keys) != len(tc.records) {
					t.Errorf("key records %v, want %v", keys, tc.records)
				}
				for k, s := range tc.records {
					if keys[k].Spec != s {
						t.Errorf("key %s recorded under %q, want %q", k, keys[k].Spec, s)
					}
				}
				if tc.records["x"] == "a" && tc.owners == legacy && keys["x"] != legacyRec(tc.owners) {
					t.Errorf("the old record's origin was not kept: %+v", keys["x"])
				}
			}
			if len(out) == 0 {
				return
			}
			mb := ""
			if b, ok := out[0].Before[ManagedBy]; ok {
				mb = b.Text + " -> " + out[0].After[ManagedBy].Text
			}
			if mb != tc.managedBy {
				t.Errorf("managed_by %q, want %q", mb, tc.managedBy)
			}
		})
	}
}

func legacyRec(o *facts.Owners) facts.OwnerRecord { return o.Resources[resource.Sysctl] }
