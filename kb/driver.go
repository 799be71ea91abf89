package kb

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// BranchType is the designation NVIDIA gives a data-center driver branch.
type BranchType uint8

const (
	// BranchTypeUnknown: the designation is not in the knowledge base.
	BranchTypeUnknown BranchType = iota
	// ProductionBranch: a production branch (about one year of support).
	ProductionBranch
	// NewFeatureBranch: a short-lived new feature branch.
	NewFeatureBranch
	// LongTermSupportBranch: a long term support branch (LTSB).
	LongTermSupportBranch
	// EvaluationBranch: an evaluation/developer branch, not for production.
	EvaluationBranch
)

// String returns the designation in NVIDIA's words.
func (t BranchType) String() string {
	switch t {
	case ProductionBranch:
		return "production branch"
	case NewFeatureBranch:
		return "new feature branch"
	case LongTermSupportBranch:
		return "long term support branch"
	case EvaluationBranch:
		return "evaluation/developer branch"
	}
	return "unknown"
}

// EOL is the end-of-life information of a driver branch.
type EOL struct {
	// Date is the first day the branch is no longer supported: NVIDIA gives
	// a month ("June 2026"), so support ends after that month and Date is
	// the first of the next month. Zero when no date is known.
	Date time.Time
	// Ended is true when NVIDIA lists the branch as end of life, with or
	// without a date.
	Ended bool
	// NotApplicable is true for branches without a support lifecycle
	// (evaluation/developer branches).
	NotApplicable bool
	// Text is the table cell as written.
	Text string
	Fact
}

// Branch is one row of driver-branches.tsv.
type Branch struct {
	// Number is the branch, 550 for R550.
	Number int
	// Type is the designation; TypeFact says how sure it is.
	Type     BranchType
	TypeFact Fact
	// EOL is the end of life.
	EOL EOL
	// SMICUDA is the highest CUDA version nvidia-smi of this branch reports.
	SMICUDA     Version
	SMICUDAFact Fact
	// Fact is the row: sources, notes, and the designation status.
	Fact
}

// IsEOL answers "is this branch past its end of life on asOf?". The date is a
// parameter so that lint results do not change with the clock of the machine
// that runs them; callers pass the date they mean (usually today).
func (b Branch) IsEOL(asOf time.Time) (Tri, Fact) {
	switch {
	case !b.EOL.Date.IsZero():
		if !asOf.Before(b.EOL.Date) {
			return Yes, b.EOL.Fact
		}
		return No, b.EOL.Fact
	case b.EOL.Ended:
		return Yes, b.EOL.Fact
	case b.EOL.NotApplicable:
		return No, b.EOL.Fact
	}
	return Unknown, b.EOL.Fact
}

var monthYear = lazyre.New(`(January|February|March|April|May|June|July|August|September|October|November|December) ([0-9]{4})`)

// parseEOLDate finds every "Month YYYY" in a cell and returns the earliest,
// as the first day after that month. Several dates occur where NVIDIA's pages
// disagree (R580: "August 2028 (v580-era page) / June 2028 (615 and 620
// pages)"); the newer pages give the earlier date, and the earlier date is
// also the one that warns in time, so the earliest wins.
func parseEOLDate(cell string) (time.Time, bool) {
	var best time.Time
	for _, m := range monthYear.FindAllStringSubmatch(cell, -1) {
		mon, err := time.Parse("January", m[1])
		if err != nil {
			continue
		}
		y, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		d := time.Date(y, mon.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
		if best.IsZero() || d.Before(best) {
			best = d
		}
	}
	return best, !best.IsZero()
}

func parseBranchType(cell string) BranchType {
	c := strings.ToLower(cell)
	switch {
	case strings.HasPrefix(c, "long term support"):
		return LongTermSupportBranch
	case strings.HasPrefix(c, "production"):
		return ProductionBranch
	case strings.HasPrefix(c, "new feature"):
		return NewFeatureBranch
	case strings.HasPrefix(c, "evaluation"):
		return EvaluationBranch
	}
	return BranchTypeUnknown
}

func (kb *KB) loadBranches() error {
	t, err := readTable(kb.fsys, "data/driver-branches.tsv", "branch", "designation", "designation_status", "end_of_life",
		"eol_status", "nvidia_smi_cuda_version", "smi_cuda_status", "sources", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		bv, err := ParseDriverVersion(r.get("branch"))
		if err != nil || bv.Len() != 1 {
			return r.errorf("branch %q: want R<number>", r.get("branch"))
		}
		dst, err := r.status("designation_status")
		if err != nil {
			return err
		}
		b := Branch{Number: bv.Branch(), Fact: r.fact(dst, "sources", "notes")}
		b.Type = parseBranchType(r.get("designation"))
		b.TypeFact = b.Fact
		if b.Type == BranchTypeUnknown {
			b.TypeFact = b.Fact.withStatus(StatusUnknown)
		}

		est, err := r.status("eol_status")
		if err != nil {
			return err
		}
		cell := r.get("end_of_life")
		b.EOL = EOL{Text: cell, Fact: b.Fact.withStatus(est)}
		lc := strings.ToLower(cell)
		switch {
		case strings.HasPrefix(lc, "not applicable"):
			b.EOL.NotApplicable = true
		case strings.HasPrefix(lc, "ended"):
			b.EOL.Ended = true
		case strings.HasPrefix(lc, "unconfirmed"):
			b.EOL.Fact.Status = StatusUnknown
		default:
			d, ok := parseEOLDate(cell)
			if !ok {
				return r.errorf("end_of_life %q: want Month YYYY, ended, not applicable or unconfirmed", cell)
			}
			b.EOL.Date = d
		}

		sst, err := r.status("smi_cuda_status")
		if err != nil {
			return err
		}
		v, ok, err := leadingVersion(r.get("nvidia_smi_cuda_version"), false)
		if err != nil {
			return r.errorf("nvidia_smi_cuda_version: %v", err)
		}
		b.SMICUDAFact = b.Fact.withStatus(StatusUnknown)
		if ok {
			b.SMICUDA = v
			b.SMICUDAFact = b.Fact.withStatus(cellStatus(r.get("nvidia_smi_cuda_version"), sst))
		}
		if _, dup := kb.branches[b.Number]; dup {
			return r.errorf("branch R%d defined twice", b.Number)
		}
		kb.branches[b.Number] = b
	}
	return nil
}

// Branch returns the row of driver branch n (550 for R550).
func (kb *KB) Branch(n int) (Branch, bool) {
	b, ok := kb.branches[n]
	return b, ok
}

// DriverBranch returns the branch a driver version belongs to
// ("550.127.08" and "550" both belong to R550). ok is false when the branch is
// not in the knowledge base.
func (kb *KB) DriverBranch(driver Version) (Branch, bool) {
	if driver.IsZero() {
		return Branch{}, false
	}
	return kb.Branch(driver.Branch())
}

// Branches returns every branch of the knowledge base, lowest first.
func (kb *KB) Branches() []Branch {
	out := make([]Branch, 0, len(kb.branches))
	for _, b := range kb.branches {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}
