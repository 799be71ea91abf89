package burnin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Path is where a node keeps its burn-in record, under gpuform's state
// directory on the node (prefixed by the simulated root on a sim:// node).
const Path = "/var/lib/gpuform/burnin.json"

// MaxRecordBytes bounds the read of a record: the node controls the file,
// and a record of 72 GPUs with its check summaries is a few KiB.
const MaxRecordBytes = 64 << 10

// FormatVersion is the record's format; a reader refuses a newer one it
// cannot judge (fields are only ever added within a version).
const FormatVersion = 1

// Defaults when the spec's verify { burnin } does not say.
const (
	// DefaultDuration is how long the sustained load runs: long enough
	// for a GPU to reach its steady temperature and for an intermittent
	// fault to show (operators' burn-ins run hours, not minutes).
	DefaultDuration = 4 * time.Hour
	// DefaultMaxAge is how long a passed burn-in qualifies a node: 30 days.
	DefaultMaxAge = 720 * time.Hour
	// MaxClockSkew is how far in the future a record's finish may lie
	// before it is refused as future-dated: a node's clock a little ahead
	// of the controller's is ordinary, a record days ahead is not a
	// burn-in that happened.
	MaxClockSkew = 5 * time.Minute
)

// GPU is one GPU as the burn-in saw it: what makes a record the record
// of these GPUs (a GPU swapped after the burn-in makes it stale).
type GPU struct {
	BusID  string `json:"pci_bus_id"`
	UUID   string `json:"uuid"`
	Serial string `json:"serial,omitempty"`
}

// Identity is the hardware and driver a burn-in qualified.
type Identity struct {
	Driver string `json:"driver_version"`
	GPUs   []GPU  `json:"gpus"`
}

// IdentityOf reads the identity from an NVML report, GPUs sorted by bus id.
func IdentityOf(rep *nvmlfacts.Report) Identity {
	if rep == nil {
		return Identity{}
	}
	id := Identity{Driver: rep.DriverVersion}
	for _, g := range rep.GPUs {
		id.GPUs = append(id.GPUs, GPU{BusID: g.BusID, UUID: g.UUID, Serial: g.Serial})
	}
	slices.SortFunc(id.GPUs, func(a, b GPU) int { return strings.Compare(a.BusID, b.BusID) })
	return id
}

// Record is what a burn-in leaves on the node.
type Record struct {
	FormatVersion int       `json:"format_version"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	// DurationSeconds is the sustained load's length.
	DurationSeconds float64 `json:"duration_seconds"`
	// Passed is true only when every finding passed.
	Passed   bool      `json:"passed"`
	Identity Identity  `json:"identity"`
	Findings []Finding `json:"findings"`
	// Modelled marks a record of a simulated node, whose loads are
	// replays and models, never a real GPU's.
	Modelled bool `json:"modelled,omitempty"`
}

// NewRecord makes the record of one burn-in: passed when every finding did.
func NewRecord(id Identity, started, finished time.Time, duration time.Duration, findings []Finding) Record {
	r := Record{FormatVersion: FormatVersion, Started: started.UTC(), Finished: finished.UTC(),
		DurationSeconds: duration.Seconds(), Identity: id, Findings: findings, Passed: len(findings) > 0}
	for _, f := range findings {
		if f.Status != StatusPass {
			r.Passed = false
		}
	}
	return r
}

// Encode writes the record as the node keeps it.
func (r Record) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if len(b) >= MaxRecordBytes {
		return nil, fmt.Errorf("burn-in record is %d bytes, over the %d a reader accepts", len(b), MaxRecordBytes)
	}
	return append(b, '\n'), nil
}

// ErrCorrupt is a record that cannot be read as one.
var ErrCorrupt = errors.New("corrupt burn-in record")

// Parse reads a record: one JSON object of a known format version, no
// larger than MaxRecordBytes (a read that hit the bound is refused, not
// read as a shorter record), whose passed flag its findings bear out.
func Parse(b []byte) (Record, error) {
	if len(b) > MaxRecordBytes {
		return Record{}, fmt.Errorf("%w: over %d bytes", ErrCorrupt, MaxRecordBytes)
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("%w: data after the record", ErrCorrupt)
	}
	switch {
	case r.FormatVersion < 1:
		return Record{}, fmt.Errorf("%w: no format_version", ErrCorrupt)
	case r.FormatVersion > FormatVersion:
		return Record{}, fmt.Errorf("%w: format_version %d is newer than this gpuform reads (%d)", ErrCorrupt, r.FormatVersion, FormatVersion)
	case r.Finished.IsZero() || r.Started.IsZero() || r.Finished.Before(r.Started):
		return Record{}, fmt.Errorf("%w: started %s and finished %s are not a run", ErrCorrupt, r.Started.Format(time.RFC3339), r.Finished.Format(time.RFC3339))
	case r.Passed && !allPassed(r.Findings):
		// NewRecord never writes this: passed is every finding passing.
		return Record{}, fmt.Errorf("%w: it says passed, and its findings do not (none, or one not passed)", ErrCorrupt)
	}
	return r, nil
}

func allPassed(fs []Finding) bool {
	for _, f := range fs {
		if f.Status != StatusPass {
			return false
		}
	}
	return len(fs) > 0
}

// Reason says why a record does or does not qualify the node.
type Reason string

// Reasons, the word verify's burnin.record check reports as observed.
const (
	ReasonValid         Reason = "valid"
	ReasonMissing       Reason = "missing"
	ReasonCorrupt       Reason = "corrupt"
	ReasonFailed        Reason = "failed"
	ReasonExpired       Reason = "expired"
	ReasonFuture        Reason = "future-dated"
	ReasonDriverChanged Reason = "driver-changed"
	ReasonGPUsChanged   Reason = "gpus-changed"
)

// Verdict is Judge's answer.
type Verdict struct {
	// OK is true only for ReasonValid.
	OK      bool
	Reason  Reason
	Message string
	// Expires is when a readable record stops qualifying the node.
	Expires time.Time
	// Duration is the sustained load's length the record says ran (zero
	// for a record that could not be read).
	Duration time.Duration
}

// Judge decides whether the record read from the node (data; found false
// when the node has none) qualifies the node now: readable, passed, not
// older than maxAge (DefaultMaxAge when zero), not finished in the future
// beyond MaxClockSkew, and taken on the driver and GPUs (bus id, UUID and
// serial) the node has now. Every other case refuses: there is no verdict
// for "could not tell".
func Judge(data []byte, found bool, now time.Time, maxAge time.Duration, cur Identity) Verdict {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if !found {
		return Verdict{Reason: ReasonMissing, Message: "no burn-in record at " + Path + ": run verify -tier burnin on the node before it takes work"}
	}
	r, err := Parse(data)
	if err != nil {
		return Verdict{Reason: ReasonCorrupt, Message: Path + ": " + err.Error() + ": run verify -tier burnin again"}
	}
	v := Verdict{Expires: r.Finished.Add(maxAge), Duration: time.Duration(math.Round(r.DurationSeconds * float64(time.Second)))}
	fin := r.Finished.Format(time.RFC3339)
	switch {
	case r.Finished.After(now.Add(MaxClockSkew)):
		v.Reason, v.Message = ReasonFuture, fmt.Sprintf("the burn-in record says it finished at %s, %s after now: the node's or the controller's clock is wrong, and the record cannot be dated", fin, r.Finished.Sub(now).Round(time.Second))
	case !r.Passed:
		v.Reason, v.Message = ReasonFailed, "the burn-in of "+fin+" failed"+failedNames(r.Findings)+": repair the node and run verify -tier burnin again"
	case !now.Before(v.Expires):
		v.Reason, v.Message = ReasonExpired, fmt.Sprintf("the burn-in of %s expired at %s (max_age %s): run verify -tier burnin again", fin, v.Expires.Format(time.RFC3339), maxAge)
	case r.Identity.Driver != cur.Driver:
		v.Reason, v.Message = ReasonDriverChanged, fmt.Sprintf("the burn-in of %s ran on driver %s, the node has %s now: a burn-in qualifies the driver it ran on", fin, orNone(r.Identity.Driver), orNone(cur.Driver))
	default:
		if d := gpuChange(r.Identity.GPUs, cur.GPUs); d != "" {
			v.Reason, v.Message = ReasonGPUsChanged, "the burn-in of "+fin+" qualified other GPUs: "+d+": run verify -tier burnin on the GPUs the node has"
			break
		}
		v.OK, v.Reason = true, ReasonValid
		v.Message = fmt.Sprintf("burn-in of %s passed, valid until %s", fin, v.Expires.Format(time.RFC3339))
	}
	return v
}

func failedNames(fs []Finding) string {
	var names []string
	for _, f := range fs {
		if f.Status != StatusPass && !slices.Contains(names, f.Check) {
			names = append(names, f.Check)
		}
	}
	if len(names) == 0 {
		return " (no finding recorded)"
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// gpuChange says how the GPUs differ, or "" when they are the same set.
func gpuChange(was, now []GPU) string {
	key := func(g GPU) string { return g.BusID }
	byBus := map[string]GPU{}
	for _, g := range was {
		byBus[key(g)] = g
	}
	var diffs []string
	seen := map[string]bool{}
	for _, g := range now {
		seen[key(g)] = true
		w, ok := byBus[key(g)]
		switch {
		case !ok:
			diffs = append(diffs, g.BusID+" was not burnt in")
		case w.UUID != g.UUID || w.Serial != g.Serial:
			diffs = append(diffs, fmt.Sprintf("%s is %s (serial %s), the burn-in ran on %s (serial %s)", g.BusID, g.UUID, orNone(g.Serial), w.UUID, orNone(w.Serial)))
		}
	}
	for _, g := range was {
		if !seen[key(g)] {
			diffs = append(diffs, g.BusID+" is gone")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
