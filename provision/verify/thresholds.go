package verify

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/nccl-thresholds.tsv
var thresholdsTSV []byte

//go:embed data/floors.tsv
var floorsTSV []byte

// Threshold is one NCCL busbw floor with the public source of its number.
type Threshold struct {
	// GPUModel is the model key, e.g. "H100".
	GPUModel string `json:"gpu_model"`
	// Interconnect is the GPU interconnect the floor applies to.
	Interconnect Interconnect `json:"interconnect"`
	// GPUs is the GPU count of the measured system.
	GPUs int `json:"gpus"`
	// Collective is the nccl-tests collective, e.g. "all_reduce".
	Collective string `json:"collective"`
	// MinBusBWGBps is the floor in GB/s.
	MinBusBWGBps float64 `json:"min_busbw_gbps"`
	// MessageBytes is the message size the floor was measured at; 0 when
	// the source does not say.
	MessageBytes int64 `json:"message_bytes,omitempty"`
	// Platform names the published system the number comes from.
	Platform string `json:"platform"`
	// Source lists the public URLs of the number.
	Source string `json:"source"`
}

// Catalogue is a set of floors, looked up by GPU model × interconnect.
type Catalogue struct {
	rows []Threshold
}

// DefaultCatalogue parses the embedded catalogue. The embedded data is
// checked by the package tests, so a parse failure is a broken build.
func DefaultCatalogue() *Catalogue {
	c, err := ParseCatalogue(thresholdsTSV, floorsTSV)
	if err != nil {
		panic("verify: embedded threshold catalogue is broken: " + err.Error())
	}
	return c
}

// ParseCatalogue joins a nccl-thresholds.tsv table (platform rows with
// numbers and sources) with a floors.tsv index (model × interconnect →
// platform).
func ParseCatalogue(thresholds, floors []byte) (*Catalogue, error) {
	platforms, err := readTSV(thresholds)
	if err != nil {
		return nil, err
	}
	index, err := readTSV(floors)
	if err != nil {
		return nil, err
	}
	c := &Catalogue{}
	for i, f := range index {
		var row map[string]string
		for _, p := range platforms {
			if p["platform"] == f["platform"] && p["kind"] == "floor" {
				row = p
			}
		}
		if row == nil {
			return nil, fmt.Errorf("floors.tsv line %d: no floor row for platform %q", i+2, f["platform"])
		}
		bw, err := strconv.ParseFloat(strings.TrimSpace(row["busbw_gbps"]), 64)
		if err != nil {
			return nil, fmt.Errorf("platform %q: busbw_gbps %q: %w", f["platform"], row["busbw_gbps"], err)
		}
		gpus, err := strconv.Atoi(f["gpus"])
		if err != nil {
			return nil, fmt.Errorf("floors.tsv line %d: gpus %q: %w", i+2, f["gpus"], err)
		}
		c.rows = append(c.rows, Threshold{
			GPUModel: f["gpu_model"], Interconnect: Interconnect(f["interconnect"]), GPUs: gpus,
			Collective: f["collective"], MinBusBWGBps: bw, MessageBytes: messageBytes(row["message_size"]),
			Platform: row["platform"], Source: row["source"],
		})
	}
	return c, nil
}

func readTSV(data []byte) ([]map[string]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var header []string
	var rows []map[string]string
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		cells := strings.Split(sc.Text(), "\t")
		if header == nil {
			header = cells
			continue
		}
		if len(cells) != len(header) {
			return nil, fmt.Errorf("TSV row %q has %d cells, header has %d", cells[0], len(cells), len(header))
		}
		row := map[string]string{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	return rows, sc.Err()
}

// messageBytes reads sizes such as "16G (single size)" or "8G".
func messageBytes(s string) int64 {
	m := regexp.MustCompile(`^(\d+)([KMG])\b`).FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n << map[string]uint{"K": 10, "M": 20, "G": 30}[m[2]]
}

// Rows returns every floor in the catalogue.
func (c *Catalogue) Rows() []Threshold { return append([]Threshold(nil), c.rows...) }

// Lookup finds the floor for a GPU model (a key such as "H100" or a driver
// name such as "NVIDIA H100 80GB HBM3"), interconnect, GPU count (0 = any)
// and collective ("" = all_reduce).
func (c *Catalogue) Lookup(model string, ic Interconnect, gpus int, collective string) (Threshold, bool) {
	key := ModelKey(model)
	if collective == "" {
		collective = "all_reduce"
	}
	for _, t := range c.rows {
		if t.GPUModel == key && t.Interconnect == ic && t.Collective == collective && (gpus == 0 || gpus == t.GPUs) {
			return t, true
		}
	}
	return Threshold{}, false
}

// ModelKey reduces a GPU name to the catalogue's model key: "NVIDIA H100
// 80GB HBM3" → "H100", "NVIDIA A100-SXM4-40GB" → "A100", "NVIDIA L40S" →
// "L40S". Unknown names are returned upper-cased and trimmed.
func ModelKey(name string) string {
	tokens := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	})
	// Whole tokens only, so that "L40S" is not read as "L4", nor "A100" as "A10".
	for _, k := range []string{"GB200", "GB300", "GH200", "B200", "B300", "H200", "H100", "A100", "A10", "V100", "L40S", "L40", "L4"} {
		if slices.Contains(tokens, k) {
			return k
		}
	}
	return strings.TrimSpace(strings.ToUpper(name))
}
