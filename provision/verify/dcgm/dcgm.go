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
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Diag is one diagnostic run.
type Diag struct {
	// Version is the DCGM version from the metadata, when printed.
	Version string `json:"version,omitempty"`
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
	// Status is the overall status, normalised: Pass, Fail, Warn, Skip.
	Status string `json:"status"`
	// GPUs maps a GPU id to its status.
	GPUs map[int]string `json:"gpus,omitempty"`
	// Warnings are DCGM's warning texts for the test.
	Warnings []string `json:"warnings,omitempty"`
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

type jsonWarning struct {
	Warning string `json:"warning"`
	ErrorID *int   `json:"error_id"`
}

type jsonResult struct {
	EntityGroup string        `json:"entity_group"`
	EntityID    *int          `json:"entity_id"`
	GPUID       *int          `json:"gpu_id"`
	GPUIDs      []int         `json:"gpu_ids"`
	Status      string        `json:"status"`
	Warnings    []jsonWarning `json:"warnings"`
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
					ids = []int{*r.EntityID}
				case r.GPUID != nil:
					ids = []int{*r.GPUID}
				default:
					ids = r.GPUIDs
				}
				for _, id := range ids {
					t.GPUs[id] = st
				}
				for _, w := range r.Warnings {
					t.Warnings = append(t.Warnings, strings.TrimSpace(w.Warning))
					if w.ErrorID != nil {
						t.ErrorIDs = append(t.ErrorIDs, *w.ErrorID)
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
	rank := map[string]int{"": 0, "Skip": 1, "Pass": 2, "Warn": 3, "Fail": 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

var (
	rowRE     = regexp.MustCompile(`^\|\s*(.*?)\s*\|\s*(.*?)\s*\|$`)
	sectionRE = regexp.MustCompile(`^\|-+\s+(\S.*?)\s+-+\+`)
	gpuRE     = regexp.MustCompile(`^GPU(\d+):\s*(\w+)`)
)

// ParseText reads the box table `dcgmi diag` prints without -j.
func ParseText(data []byte) (*Diag, error) {
	d := &Diag{Tests: []Test{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := sectionRE.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil || section == "" {
			continue
		}
		key, val := m[1], m[2]
		switch {
		case section == "Metadata":
			if key == "DCGM Version" {
				d.Version = val
			}
		case key != "":
			d.Tests = append(d.Tests, Test{Category: section, Name: key, Status: normStatus(val), GPUs: map[int]string{}})
		case len(d.Tests) > 0:
			t := &d.Tests[len(d.Tests)-1]
			if g := gpuRE.FindStringSubmatch(val); g != nil {
				id, _ := strconv.Atoi(g[1])
				t.GPUs[id] = normStatus(g[2])
			} else if val != "" {
				// Continuation lines carry warning text.
				t.Warnings = append(t.Warnings, val)
			}
		}
	}
	if len(d.Tests) == 0 {
		return nil, fmt.Errorf("parsing dcgmi diag output: no test results found")
	}
	return d, sc.Err()
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
