// Package dcgm runs NVIDIA DCGM's diagnostic (`dcgmi diag -r LEVEL -j`) on
// a node for verify's quick tier and reads its result: the JSON of DCGM 4
// ("DCGM Diagnostic" → test_categories → tests → results per entity), the
// JSON of DCGM 3 and earlier ("DCGM GPU Diagnostic", results keyed by
// gpu_id) and, when JSON is not available, the text table.
//
// It reports what DCGM said; it does not add judgement beyond mapping a
// test's status onto a check (Fail fails, Warn passes with its message,
// Skip skips).
package dcgm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Diag is one diagnostic run.
type Diag struct {
	// Version is the DCGM version from the metadata, when printed.
	Version string `json:"version,omitempty"`
	// Driver is the driver version DCGM detected, when printed.
	Driver string `json:"driver,omitempty"`
	// Tests are the tests in output order.
	Tests []Test `json:"tests"`
	// RuntimeError is DCGM's own error for the run (e.g. no host engine).
	RuntimeError string `json:"runtime_error,omitempty"`
}

// Test is one diagnostic test and its per-GPU results.
type Test struct {
	// Category is the section, e.g. "Deployment", "Hardware".
	Category string `json:"category,omitempty"`
	// Name is the test, e.g. "software", "diagnostic", "pcie".
	Name string `json:"name"`
	// Status is the overall status, normalised: Pass, Fail, Warn, Skip,
	// "Not run"; anything else is kept as DCGM printed it.
	Status string `json:"status"`
	// GPUs maps a GPU id to its status.
	GPUs map[int]string `json:"gpus,omitempty"`
	// All is the status DCGM 3 and earlier print for every GPU at once
	// ("Pass - All"), without naming them; "" otherwise.
	All string `json:"all,omitempty"`
	// Warnings are DCGM's warning and error texts for the test, each
	// message whole (the table wraps them over several lines).
	Warnings []string `json:"warnings,omitempty"`
	// Info are DCGM's informational texts for the test (allocated memory,
	// measured bandwidth): never a reason to fail.
	Info []string `json:"info,omitempty"`
	// ErrorIDs are the DCGM error codes (dcgmError_t, DCGM_FR_*) of the
	// warnings that carry one, in order: the key into the knowledge
	// base's remediation catalogue.
	ErrorIDs []int `json:"error_ids,omitempty"`
}

// normStatus capitalises statuses the way DCGM 4 prints them; older
// versions printed other cases.
func normStatus(s string) string {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// jsonWarning is one warning of a result. DCGM 4 writes an object with
// "warning" and "error_id"; DCGM 3's level-one (software) tests write the
// text under "warnings" inside the object; a bare string is read too.
type jsonWarning struct {
	Warning string
	ErrorID *int
}

func (w *jsonWarning) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		w.Warning = s
		return nil
	}
	var o struct {
		Warning  *string   `json:"warning"`
		Warnings *string   `json:"warnings"`
		ErrorID  *jsonInts `json:"error_id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	switch {
	case o.Warning != nil:
		w.Warning = *o.Warning
	case o.Warnings != nil:
		w.Warning = *o.Warnings
	}
	if o.ErrorID != nil && len(*o.ErrorID) == 1 {
		id := (*o.ErrorID)[0]
		w.ErrorID = &id
	}
	return nil
}

// jsonInts reads the GPU ids DCGM writes as a number (DCGM 4's
// entity_id), a string (DCGM 3 prints "gpu_id": "0" and "gpu_ids": "0,1"),
// or a list of either.
type jsonInts []int

func (v *jsonInts) UnmarshalJSON(b []byte) error {
	var n int
	if json.Unmarshal(b, &n) == nil {
		*v = jsonInts{n}
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		out := jsonInts{}
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("GPU id %q is not a number", f)
			}
			out = append(out, n)
		}
		*v = out
		return nil
	}
	var list []jsonInts
	if err := json.Unmarshal(b, &list); err != nil {
		if len(b) > 40 {
			b = append(b[:40:40], "…"...)
		}
		return fmt.Errorf("GPU ids: want a number, a string or a list, got %s", b)
	}
	out := jsonInts{}
	for _, l := range list {
		out = append(out, l...)
	}
	*v = out
	return nil
}

// jsonInfo is a result's info: a string (DCGM 3) or a list of strings
// (DCGM 4's dcgmi/Diag.cpp); an object in the list is read for its
// "message", "info" or "msg" text.
type jsonInfo []string

func (v *jsonInfo) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s = strings.TrimSpace(s); s != "" {
			*v = jsonInfo{s}
		}
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(b, &list) != nil {
		return nil // information only: an unknown shape is not an error
	}
	for _, raw := range list {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			var o map[string]any
			if json.Unmarshal(raw, &o) == nil {
				for _, k := range []string{"message", "info", "msg"} {
					if t, ok := o[k].(string); ok {
						one = t
						break
					}
				}
			}
		}
		if one = strings.TrimSpace(one); one != "" {
			*v = append(*v, one)
		}
	}
	return nil
}

type jsonResult struct {
	EntityGroup string        `json:"entity_group"`
	EntityID    *jsonInts     `json:"entity_id"`
	GPUID       *jsonInts     `json:"gpu_id"`
	GPUIDs      *jsonInts     `json:"gpu_ids"`
	Status      string        `json:"status"`
	Warnings    []jsonWarning `json:"warnings"`
	Info        jsonInfo      `json:"info"`
}

type jsonTest struct {
	Name    string       `json:"name"`
	Results []jsonResult `json:"results"`
	Summary struct {
		Status string `json:"status"`
	} `json:"test_summary"`
}

type jsonDoc struct {
	Categories []struct {
		Category string     `json:"category"`
		Tests    []jsonTest `json:"tests"`
	} `json:"test_categories"`
	RuntimeError string `json:"runtime_error"`
}

// ParseJSON reads `dcgmi diag -j` output of DCGM 4 or earlier.
func ParseJSON(data []byte) (*Diag, error) {
	var top struct {
		V4       *jsonDoc `json:"DCGM Diagnostic"`
		V3       *jsonDoc `json:"DCGM GPU Diagnostic"`
		Metadata struct {
			Version string `json:"version"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("parsing dcgmi diag JSON: %w", err)
	}
	doc := top.V4
	if doc == nil {
		doc = top.V3
	}
	if doc == nil {
		return nil, fmt.Errorf(`parsing dcgmi diag JSON: neither "DCGM Diagnostic" nor "DCGM GPU Diagnostic" present`)
	}
	d := &Diag{Version: top.Metadata.Version, RuntimeError: doc.RuntimeError, Tests: []Test{}}
	for _, c := range doc.Categories {
		for _, jt := range c.Tests {
			t := Test{Category: c.Category, Name: jt.Name, Status: normStatus(jt.Summary.Status), GPUs: map[int]string{}}
			worst := ""
			for _, r := range jt.Results {
				st := normStatus(r.Status)
				worst = worse(worst, st)
				var ids []int
				switch {
				case r.EntityID != nil && (r.EntityGroup == "" || strings.EqualFold(r.EntityGroup, "GPU")):
					ids = *r.EntityID
				case r.EntityID != nil:
					// A CPU or switch result: not a GPU of ours.
				case r.GPUID != nil:
					ids = *r.GPUID
				case r.GPUIDs != nil:
					ids = *r.GPUIDs
				}
				for _, id := range ids {
					t.GPUs[id] = st
				}
				for _, w := range r.Warnings {
					if text := strings.TrimSpace(w.Warning); text != "" && !slices.Contains(t.Warnings, text) {
						t.Warnings = append(t.Warnings, text)
					}
					if w.ErrorID != nil {
						t.ErrorIDs = append(t.ErrorIDs, *w.ErrorID)
					}
				}
				for _, in := range r.Info {
					if !slices.Contains(t.Info, in) {
						t.Info = append(t.Info, in)
					}
				}
			}
			if t.Status == "" {
				// Older output has no test_summary: the worst result stands.
				t.Status = worst
			}
			d.Tests = append(d.Tests, t)
		}
	}
	return d, nil
}

// worse returns the more severe of two statuses.
func worse(a, b string) string {
	rank := map[string]int{"": 0, "Not run": 1, "Skip": 1, "Pass": 2, "Warn": 3, "Fail": 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

var (
	// sectionRE matches a section heading. DCGM prints the first one after
	// the header as "|-----  Metadata  ---+---|" and the later ones as
	// "+-----  Integration  ---+---+" (a border line with a name in it).
	sectionRE = lazyre.New(`^[|+]-+\s+(\S.*?)\s+-+\+`)
	// entityRE is DCGM 4's per-entity result row, "GPU0: Pass".
	entityRE = lazyre.New(`^([A-Za-z_]+?)(\d+):\s*(Pass|Fail|Warn|Skip|Not Run)$`)
	// groupRE is DCGM 3's (and earlier) per-test summary: "Pass - All",
	// "Fail - GPU: 0", "Pass - GPUs: 1, 2, 3".
	groupRE = lazyre.New(`^(Pass|Fail|Warn|Skip) - (All|GPUs?:\s*([0-9, ]+))$`)
	// statusRE is a bare status: a DCGM 4 test row, or a DCGM 3 level-one
	// (software) test.
	statusRE = lazyre.New(`^(Pass|Fail|Warn|Skip|Not Run)$`)
	// messageRE is the name column of a message row: "Warning", "Error",
	// "Info", or DCGM 4's per-entity "Warning: GPU0".
	messageRE = lazyre.New(`^(Warning|Error|Info)(?::\s*[A-Za-z_]+\d+)?$`)
)

// infoWidth is the width of the text DCGM puts in one line of the result
// column: longer messages go on as many lines as they need, cut at exactly
// this many characters (mid-word), with a blank name column.
const infoWidth = 45

// row is one table line split into its two columns. value is trimmed;
// chunk is the result column as DCGM wrote it (its first infoWidth
// characters after the one-space margin), which keeps the spaces that
// fall at the start or end of a wrapped piece of a message.
type row struct {
	name, value, chunk string
}

// splitRow reads "| name | value |". A line whose closing bar was cut off
// (an excerpt in a document) still reads.
func splitRow(line string) (row, bool) {
	if !strings.HasPrefix(line, "|") {
		return row{}, false
	}
	rest := line[1:]
	i := strings.IndexByte(rest, '|')
	if i < 0 {
		return row{}, false
	}
	name, cell := rest[:i], rest[i+1:]
	cell = strings.TrimSuffix(cell, "|")
	chunk := strings.TrimPrefix(cell, " ")
	if len(chunk) > infoWidth {
		chunk = chunk[:infoWidth]
	}
	return row{name: strings.TrimSpace(name), value: strings.TrimSpace(cell), chunk: chunk}, true
}

// textParser keeps the state of one table read.
type textParser struct {
	d       *Diag
	section string
	// cur is the index of the test the rows below belong to; -1 before
	// the first test of a section.
	cur int
	// msg is the message being continued on blank-name rows; nil when
	// none is open.
	msg *message
	// explicit records tests whose overall status DCGM printed as a bare
	// status (DCGM 4, or a level-one test): the per-GPU rows below do not
	// change it.
	explicit map[int]bool
	index    map[string]int
	// repeat records tests met again in a second table.
	repeat map[int]bool
}

// message is a Warning, Error or Info text gathered over its rows.
type message struct {
	kind string
	text strings.Builder
}

// ParseText reads the box table `dcgmi diag` prints without -j, as DCGM
// 1.x to 4.x print it: the section headings (Metadata, Deployment,
// Integration, Hardware, Stress, Performance), one row per test with its
// status, DCGM 3's "Pass - All" / "Fail - GPU: 0" summaries and DCGM 4's
// "GPU0: Pass" rows, and the Warning, Error and Info messages wrapped over
// several rows. Warnings and errors belong to the test above them; Info is
// kept as information and never changes a status. A table printed twice
// (two runs in one capture) reads as one: a test seen again keeps the
// worse status.
func ParseText(data []byte) (*Diag, error) {
	p := &textParser{d: &Diag{Tests: []Test{}}, cur: -1, explicit: map[int]bool{}, index: map[string]int{}, repeat: map[int]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		p.line(strings.TrimSpace(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parsing dcgmi diag output: %w", err)
	}
	p.flush()
	if len(p.d.Tests) == 0 {
		return nil, fmt.Errorf("parsing dcgmi diag output: no test results found")
	}
	for i := range p.d.Tests {
		t := &p.d.Tests[i]
		if t.Status == "" {
			t.Status = worstOf(t.GPUs)
		}
	}
	return p.d, nil
}

func (p *textParser) line(line string) {
	if m := sectionRE.FindStringSubmatch(line); m != nil {
		p.flush()
		p.section, p.cur = m[1], -1
		return
	}
	r, ok := splitRow(line)
	if !ok || p.section == "" || (r.name == "" && r.value == "") {
		return
	}
	if p.section == "Metadata" {
		switch r.name {
		case "DCGM Version":
			p.d.Version = r.value
		case "Driver Version Detected":
			p.d.Driver = r.value
		}
		return
	}
	if r.name == "Diagnostic" && r.value == "Result" {
		// The header of a second table in the same capture.
		p.flush()
		p.section, p.cur = "", -1
		return
	}
	if m := messageRE.FindStringSubmatch(r.name); m != nil {
		p.flush()
		p.msg = &message{kind: m[1]}
		p.msg.text.WriteString(r.chunk)
		return
	}
	if r.name != "" {
		p.flush()
		p.startTest(r.name)
		if !p.status(r.value) && r.value != "" {
			// A status this parser does not know: kept as printed, so
			// the check can say so instead of guessing.
			p.d.Tests[p.cur].Status = r.value
			p.explicit[p.cur] = true
		}
		return
	}
	// A blank name: a further status row of the test, or the next line of
	// the open message.
	if p.cur >= 0 && p.status(r.value) {
		p.flush()
		return
	}
	if p.msg != nil {
		p.msg.text.WriteString(r.chunk)
		return
	}
	// Text under a test with no message heading (DCGM 3's Diagnostic
	// "Code: (...)" line): information.
	if p.cur >= 0 {
		p.d.Tests[p.cur].Info = append(p.d.Tests[p.cur].Info, r.value)
	}
}

// startTest makes name the current test, merging a repeat into the test
// already read.
func (p *textParser) startTest(name string) {
	key := p.section + "\x00" + name
	if i, ok := p.index[key]; ok {
		p.cur = i
		p.repeat[i] = true
		return
	}
	p.d.Tests = append(p.d.Tests, Test{Category: p.section, Name: name, GPUs: map[int]string{}})
	p.cur = len(p.d.Tests) - 1
	p.index[key] = p.cur
}

// status applies a status cell to the current test and reports whether v
// was one.
func (p *textParser) status(v string) bool {
	if p.cur < 0 {
		return false
	}
	t := &p.d.Tests[p.cur]
	if m := statusRE.FindStringSubmatch(v); m != nil {
		st := normStatus(m[1])
		if p.repeat[p.cur] {
			st = worse(t.Status, st)
		}
		t.Status = st
		p.explicit[p.cur] = true
		return true
	}
	if m := entityRE.FindStringSubmatch(v); m != nil {
		if strings.EqualFold(m[1], "GPU") {
			id, _ := strconv.Atoi(m[2])
			t.GPUs[id] = worse(t.GPUs[id], normStatus(m[3]))
		}
		return true
	}
	if m := groupRE.FindStringSubmatch(v); m != nil {
		st := normStatus(m[1])
		if m[2] == "All" {
			t.All = worse(t.All, st)
		} else {
			for _, f := range strings.Split(m[3], ",") {
				if id, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
					t.GPUs[id] = worse(t.GPUs[id], st)
				}
			}
		}
		if !p.explicit[p.cur] {
			t.Status = worse(t.Status, st)
		}
		return true
	}
	return false
}

// flush closes the open message: a Warning or Error goes to the current
// test; one with no test above it (an excerpt that starts with it) is a
// test of its own, so it is never lost; Info is information only.
func (p *textParser) flush() {
	if p.msg == nil {
		return
	}
	text := strings.TrimSpace(p.msg.text.String())
	kind := p.msg.kind
	p.msg = nil
	if text == "" {
		return
	}
	if p.cur < 0 {
		if kind == "Info" {
			return
		}
		st := "Fail"
		if kind == "Warning" {
			st = "Warn"
		}
		p.startTest(kind)
		p.d.Tests[p.cur].Status = st
		p.explicit[p.cur] = true
	}
	t := &p.d.Tests[p.cur]
	if kind == "Info" {
		t.Info = append(t.Info, text)
	} else if !slices.Contains(t.Warnings, text) {
		t.Warnings = append(t.Warnings, text)
	}
}

// worstOf is the worst status among per-GPU results; "" when none.
func worstOf(gpus map[int]string) string {
	st := ""
	for _, s := range gpus {
		st = worse(st, s)
	}
	return st
}

// Parse reads either format.
func Parse(data []byte) (*Diag, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return ParseJSON(t)
	}
	// dcgmi runs through the user's login shell, whose rc files may print
	// to stdout first (a banner, sometimes without its newline): the JSON
	// document is the first '{' from which the rest is valid JSON.
	off := 0
	for tries := 0; tries < 32; tries++ {
		i := bytes.IndexByte(data[off:], '{')
		if i < 0 {
			break
		}
		off += i
		if t := bytes.TrimSpace(data[off:]); json.Valid(t) {
			return ParseJSON(t)
		}
		off++
	}
	return ParseText(data)
}

// FailedGPUs lists the GPUs a test failed on, sorted.
func (t Test) FailedGPUs() []int {
	var ids []int
	for id, st := range t.GPUs {
		if st == "Fail" {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}
