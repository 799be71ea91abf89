package kb

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const xidCatalogueURL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

// readTSV reads a test data table as rows of cells, header dropped.
func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n")[1:] {
		out = append(out, strings.Split(l, "\t"))
	}
	return out
}

// catalogueAction is how gpuform classes each of the catalogue's immediate
// action buckets; the text some rows carry instead of a bucket, and empty
// cells, have no class here: their rows must say why in their note.
var catalogueAction = map[string]Action{
	"IGNORE": ActionNone, "RESET_GPU": ActionResetGPU, "RESTART_BM": ActionReboot,
	"RESTART_APP": ActionMonitor, "CONTACT_SUPPORT": ActionRMA, "RESTART_VM": ActionReboot,
	"CHECK_MECHANICALS": ActionInspect, "UPDATE_SWFW": ActionConfig, "CHECK_UVM": ActionConfig,
	"XID_154": ActionNone, "WORKFLOW_XID_45": ActionMonitor, "WORKFLOW_XID_48": ActionResetGPU,
	"WORKFLOW_NVLINK_ERR": ActionResetGPU, "WORKFLOW_NVLINK5_ERR": ActionResetGPU,
	// A bucket NVSentinel's mapping uses for CONTACT_SUPPORT.
	"UNEXPECTED_ERR_REPORT_ISSUE": ActionRMA,
}

// directBuckets name an action outright; only they may make a row confirmed.
var directBuckets = map[string]bool{"IGNORE": true, "RESET_GPU": true, "RESTART_BM": true}

// TestXidCatalogueWalk walks remediation.tsv's Xid rows against NVIDIA's
// Xid catalogue as recorded in testdata/xid-catalog (read in full,
// catalogue first): every Xid of the catalogue has a row with its
// mnemonic and immediate action; the row's class is the bucket's class
// (where the catalogue gives text or nothing instead of a bucket, the
// row's note says how gpuform classes it); "confirmed" only where the
// catalogue was read and names the action outright; and where the second
// source (NVSentinel's mapping) gives another class, the row says so.
func TestXidCatalogueWalk(t *testing.T) {
	kb := mustKB(t)
	cat := readTSV(t, "testdata/xid-catalog/xids.tsv")
	if len(cat) != 172 {
		t.Fatalf("catalogue extract has %d rows, want 172", len(cat))
	}
	for _, c := range cat {
		code, mnemonic, immediate := c[0], c[1], c[2]
		r, ok := kb.Remedy("xid", code)
		if !ok {
			t.Errorf("Xid %s (%s): in the catalogue, not in remediation.tsv", code, mnemonic)
			continue
		}
		if r.Name != mnemonic {
			t.Errorf("Xid %s: name %q, catalogue %q", code, r.Name, mnemonic)
		}
		if r.NVIDIAAction != immediate {
			t.Errorf("Xid %s: nvidia_action %q, catalogue's immediate action %q", code, r.NVIDIAAction, immediate)
		}
		if len(r.Sources) == 0 || r.Sources[0] != xidCatalogueURL {
			t.Errorf("Xid %s: first source %v, want the catalogue", code, r.Sources)
		}
		for _, s := range r.Sources {
			if strings.Contains(s, "not read") {
				t.Errorf("Xid %s: source %q says the catalogue was not read; it was", code, s)
			}
		}
		want, isBucket := catalogueAction[immediate]
		switch {
		case isBucket && r.Action != want:
			t.Errorf("Xid %s: action %s, the catalogue's %s is %s", code, r.Action, immediate, want)
		case !isBucket && r.Note == "":
			t.Errorf("Xid %s: the catalogue gives %q, no bucket; the row needs a note saying how gpuform classes it", code, immediate)
		}
		if r.Status == Confirmed && !(directBuckets[immediate] && r.Action == want) && r.Action != ActionUnknown {
			t.Errorf("Xid %s: confirmed, but the catalogue's %q does not name action %s outright", code, immediate, r.Action)
		}
	}
	// The second source: where it classes a row otherwise, the row's note
	// names the disagreement.
	for _, s := range readTSV(t, "testdata/xid-catalog/nvsentinel-6f8b0fc.tsv") {
		code, name, bucket := s[0], s[1], s[2]
		r, ok := kb.Remedy("xid", code)
		if !ok {
			continue
		}
		other, known := catalogueAction[bucket]
		if code == "154" {
			other, known = ActionNone, true // "follow the guidance of the Xid it names"
		}
		disagree := (known && other != r.Action) || (name != "-" && name != r.Name)
		if disagree && !strings.Contains(r.Note, "NVSentinel") {
			t.Errorf("Xid %s: NVSentinel gives %s (%s), the table %s (%s), and the note does not say so", code, bucket, name, r.Action, r.Name)
		}
	}
}

// The Xids the issue named as draining healthy nodes are what the
// catalogue says, and the new ones are known.
func TestXidCatalogueRows(t *testing.T) {
	kb := mustKB(t)
	for code, want := range map[uint64]Action{160: ActionNone, 162: ActionNone, 108: ActionNone, 167: ActionUnknown, 171: ActionResetGPU, 172: ActionResetGPU, 79: ActionReboot} {
		r, ok := kb.XidRemedy(code)
		if !ok || r.Action != want {
			t.Errorf("Xid %d: %v %v, want %s", code, r.Action, ok, want)
		}
	}
}

// TestXidSubcodes walks xid-subcodes.tsv against the catalogue's "XID
// 144-150 Decode" sheet as recorded, and pins the lookups verify makes.
func TestXidSubcodes(t *testing.T) {
	kb := mustKB(t)
	class := map[string]Action{"IGNORE": ActionNone, "RESET_GPU": ActionResetGPU, "XID_154_EVAL": ActionMonitor}
	for _, d := range readTSV(t, "testdata/xid-catalog/xid-144-150-decode.tsv") {
		x, _ := strconv.ParseUint(d[0], 10, 32)
		sub := strings.Split(d[1], "/")[0]
		status := strings.Split(d[2], "/")[0]
		if status == "-" {
			continue // decoded by IntrInfo bits: several rows answer, checked below
		}
		r, ok := kb.XidSubcodeRemedy(x, sub, status, false)
		if !ok {
			t.Errorf("Xid %d %s %s: no subcode answer", x, sub, status)
			continue
		}
		if r.Action != class[d[3]] {
			t.Errorf("Xid %d %s %s: %s, the sheet says %s", x, sub, status, r.Action, d[3])
		}
	}
	tests := []struct {
		xid         uint64
		sub, status string
		fatal       bool
		want        Action
		ok          bool
	}{
		{145, "RLW_REMAP", "0x00000001", false, ActionMonitor, true},
		{145, "RLW_REMAP", "0x00000040", true, ActionResetGPU, true},
		{144, "SAW_MVB", "0x00000004", false, ActionNone, true},
		// RLW_RXPIPE's promotable rows: IGNORE, or RESET_GPU when fatal.
		{145, "RLW_RXPIPE", "0x00000001", false, ActionNone, true},
		{145, "RLW_RXPIPE", "0x00000001", true, ActionResetGPU, true},
		// The V2 name of a subcode answers as well as the V1 one.
		{146, "TLW_RX_PIPE0", "0x00000004", true, ActionResetGPU, true},
		// NETIR_LINK_EVT is decoded by IntrInfo bits: the worst row answers.
		{149, "NETIR_LINK_EVT", "0x00000000", true, ActionResetGPU, true},
		{149, "NETIR_BER_EVENT", "0x00000001", false, ActionNone, true},
		{145, "RLW_REMAP", "0x00004000", false, "", false},
		{79, "RLW_REMAP", "0x00000001", false, "", false},
	}
	for _, tc := range tests {
		r, ok := kb.XidSubcodeRemedy(tc.xid, tc.sub, tc.status, tc.fatal)
		if ok != tc.ok || (ok && r.Action != tc.want) {
			t.Errorf("Xid %d %s %s fatal=%v: %s %v, want %s %v", tc.xid, tc.sub, tc.status, tc.fatal, r.Action, ok, tc.want, tc.ok)
		}
	}
}

// TestDriverAdvisories pins the bulletins the issue quotes and checks every
// row names its bulletin.
func TestDriverAdvisories(t *testing.T) {
	kb := mustKB(t)
	cves := func(v string) []string {
		d, err := ParseDriverVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range kb.DriverAdvisories(d) {
			out = append(out, a.CVE)
		}
		return out
	}
	has := func(list []string, id string) bool {
		for _, s := range list {
			if s == id {
				return true
			}
		}
		return false
	}
	// Bulletin 5747: R580 fixed at 580.126.09; bulletin 5821: 580.159.03.
	if got := cves("580.95.05"); !has(got, "CVE-2025-33219") || !has(got, "CVE-2026-24187") {
		t.Errorf("580.95.05: %v, want CVE-2025-33219 (5747) and CVE-2026-24187 (5821)", got)
	}
	if got := cves("580.126.09"); has(got, "CVE-2025-33219") || !has(got, "CVE-2026-24187") {
		t.Errorf("580.126.09: %v, want 5821's CVEs only", got)
	}
	if got := cves("580.159.03"); len(got) != 0 {
		t.Errorf("580.159.03: %v, want none", got)
	}
	if got := cves("595.58.03"); !has(got, "CVE-2026-24187") {
		t.Errorf("595.58.03: %v, want CVE-2026-24187", got)
	}
	if got := cves("595.71.05"); len(got) != 0 {
		t.Errorf("595.71.05: %v, want none", got)
	}
	if got := cves("580"); len(got) != 0 {
		t.Errorf("floating 580: %v, want no answer", got)
	}
	b, ok := kb.NewestDriverBulletin()
	if !ok || b.Bulletin != "5821" || !b.Published.Equal(time.Date(2026, 5, 21, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("newest bulletin %+v", b)
	}
	for _, a := range kb.DriverAdvisoryList() {
		if len(a.Sources) < 2 || !strings.Contains(a.Sources[0], "/"+a.Bulletin+"/") || !strings.HasPrefix(a.CVE, "CVE-") {
			t.Errorf("%s: sources %v do not name bulletin %s", a.CVE, a.Sources, a.Bulletin)
		}
	}
}

// TestRefreshDate: every table of data/ has a "last checked" date in
// docs/knowledge-base.md, the refresh date is the oldest of them, and no
// dated fact is newer than it.
func TestRefreshDate(t *testing.T) {
	b, err := os.ReadFile("../docs/knowledge-base.md")
	if err != nil {
		t.Fatal(err)
	}
	dated := map[string]time.Time{}
	var oldest time.Time
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		d, err := time.Parse(time.DateOnly, strings.TrimSpace(cells[len(cells)-1]))
		if err != nil {
			t.Errorf("docs/knowledge-base.md row without a last-checked date: %s", l)
			continue
		}
		for _, part := range strings.Split(cells[0], "`") {
			if strings.HasSuffix(part, ".tsv") {
				dated[part[strings.LastIndex(part, "/")+1:]] = d
			}
		}
		if oldest.IsZero() || d.Before(oldest) {
			oldest = d
		}
	}
	files, err := os.ReadDir("data")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".tsv") {
			if _, ok := dated[f.Name()]; !ok {
				t.Errorf("data/%s has no last-checked date in docs/knowledge-base.md", f.Name())
			}
		}
	}
	kb := mustKB(t)
	r, ok := kb.RefreshDate()
	if !ok || !r.Date.Equal(oldest) {
		t.Errorf("refresh date %s, want the oldest per-table date %s", r, oldest.Format(time.DateOnly))
	}
	if d, ok := kb.NewestFact(); ok && d.Date.After(r.Date) {
		t.Errorf("newest fact %s (%s) is after the refresh date %s", d, d.What, r)
	}
}
