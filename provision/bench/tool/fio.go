package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// FioResult is one fio job's throughput, in MB/s (10^6 bytes a second) and
// I/O operations a second, for each direction the job did.
type FioResult struct {
	// Job is the job's name (--name).
	Job string
	// ReadMBps and WriteMBps are the job's bandwidth each way, 0 for a
	// direction it did not do.
	ReadMBps, WriteMBps float64
	// ReadIOPS and WriteIOPS are its I/O operations a second each way.
	ReadIOPS, WriteIOPS float64
}

// fioDir is one direction of a job in fio's JSON. bw is KiB/s in every
// version; bw_bytes (bytes/s) exists from fio 3.0 on and is preferred,
// since bw is rounded to whole KiB.
type fioDir struct {
	BW      *float64 `json:"bw"`
	BWBytes *float64 `json:"bw_bytes"`
	IOPS    *float64 `json:"iops"`
}

type fioDoc struct {
	Version string `json:"fio version"`
	Jobs    []struct {
		Name  string  `json:"jobname"`
		Error int     `json:"error"`
		Read  *fioDir `json:"read"`
		Write *fioDir `json:"write"`
	} `json:"jobs"`
}

// mbps returns a direction's bandwidth in MB/s.
func (d *fioDir) mbps() (float64, bool) {
	switch {
	case d == nil:
		return 0, true
	case d.BWBytes != nil:
		return *d.BWBytes / 1e6, finite(*d.BWBytes)
	case d.BW != nil:
		return *d.BW * 1024 / 1e6, finite(*d.BW)
	}
	return 0, true
}

func (d *fioDir) iops() (float64, bool) {
	if d == nil || d.IOPS == nil {
		return 0, true
	}
	return *d.IOPS, finite(*d.IOPS)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// ParseFioJSON reads fio --output-format=json (fio 2.x and 3.x): one
// result per job (one per group with --group_reporting). Text that fio
// prints before the document (its "note: …" lines, the job banner of
// --output-format=normal,json) is skipped.
//
// It returns an error for output with no JSON document (fio's error
// message is quoted), a document cut short, a job fio reports as failed
// (non-zero "error", with the jobs before it), and a document without jobs.
func ParseFioJSON(r io.Reader) ([]FioResult, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading fio output: %w", err)
	}
	start := jsonStart(b)
	if start < 0 {
		if msg := firstLine(b); msg != "" {
			return nil, fmt.Errorf("no fio JSON in the output: %s", msg)
		}
		return nil, errors.New("no fio JSON in the output (empty)")
	}
	var doc fioDoc
	if err := json.NewDecoder(bytes.NewReader(b[start:])).Decode(&doc); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("fio JSON is cut short (the run was interrupted or the output truncated)")
		}
		return nil, fmt.Errorf("fio JSON: %w", err)
	}
	if len(doc.Jobs) == 0 {
		return nil, errors.New(`fio JSON has no "jobs"`)
	}
	var out []FioResult
	for _, j := range doc.Jobs {
		if j.Error != 0 {
			return out, fmt.Errorf("fio job %q failed with error %d", j.Name, j.Error)
		}
		res := FioResult{Job: j.Name}
		var ok [4]bool
		res.ReadMBps, ok[0] = j.Read.mbps()
		res.WriteMBps, ok[1] = j.Write.mbps()
		res.ReadIOPS, ok[2] = j.Read.iops()
		res.WriteIOPS, ok[3] = j.Write.iops()
		if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
			return out, fmt.Errorf("fio job %q: negative or non-finite bandwidth", j.Name)
		}
		out = append(out, res)
	}
	return out, nil
}

// jsonStart finds the '{' that opens fio's document: the first one at the
// start of a line, so a brace inside a note before it is not taken.
func jsonStart(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] == '{' && (i == 0 || b[i-1] == '\n') {
			return i
		}
	}
	return -1
}

func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200]
			}
			return l
		}
	}
	return ""
}
