package verify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestBurninRecordCheck: burnin.record passes only a record that
// burnin.Judge finds valid for the node's NVML identity, and is an error,
// never a pass, when the record or the NVML facts could not be read.
func TestBurninRecordCheck(t *testing.T) {
	t.Parallel()
	rep := collectMock(t, nvmlfacts.MockDGXH100)
	fin := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	rec, err := burnin.NewRecord(burnin.IdentityOf(rep), fin.Add(-4*time.Hour), fin, 4*time.Hour,
		[]burnin.Finding{{Check: "burnin.thermal", Status: burnin.StatusPass}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	other := *rep
	other.GPUs = append([]nvmlfacts.GPU(nil), rep.GPUs...)
	other.GPUs[2].UUID = "GPU-00000000-0000-0000-0000-00000000beef"
	for _, c := range []struct {
		name     string
		data     []byte
		found    bool
		err      error
		rep      *nvmlfacts.Report
		now      time.Time
		min      time.Duration
		status   Status
		observed string
	}{
		{"valid", rec, true, nil, rep, fin.Add(time.Hour), 4 * time.Hour, StatusPass, "valid"},
		{"missing", nil, false, nil, rep, fin, 4 * time.Hour, StatusFail, "missing"},
		{"expired", rec, true, nil, rep, fin.Add(49 * time.Hour), 4 * time.Hour, StatusFail, "expired"},
		{"GPU swapped", rec, true, nil, &other, fin, 4 * time.Hour, StatusFail, "gpus-changed"},
		{"unreadable", nil, false, errors.New("exit 1: permission denied"), rep, fin, 4 * time.Hour, StatusError, "unreadable"},
		// A record of a 4h load does not qualify the node for a spec
		// that asks 8h. Shown to fail without the duration check.
		{"shorter than the spec's duration", rec, true, nil, rep, fin.Add(time.Hour), 8 * time.Hour, StatusFail, "too-short"},
		{"no NVML", rec, true, nil, nil, fin, 4 * time.Hour, StatusError, "no NVML facts"},
	} {
		r := BurninRecordCheck(c.data, c.found, c.err, c.rep, c.now, 48*time.Hour, c.min)
		if r.ID != "burnin.record" || r.Status != c.status || r.Observed != c.observed || !strings.Contains(r.Expected, "48h0m0s") {
			t.Errorf("%s: %+v, want %s %s", c.name, r, c.status, c.observed)
		}
	}
}
