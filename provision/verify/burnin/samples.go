package burnin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// SampleQuery is the nvidia-smi query the sustained load is sampled with,
// every SampleEvery: one CSV line per GPU per sample, in this order.
const SampleQuery = "timestamp,pci.bus_id,name,temperature.gpu,clocks.sm,clocks_event_reasons.active"

// SampleEvery is the sampling period of the sustained load.
const SampleEvery = 5 * time.Second

// sampleTime is nvidia-smi's timestamp format.
const sampleTime = "2006/01/02 15:04:05.000"

// ParseSamples reads `nvidia-smi --query-gpu=SampleQuery
// --format=csv,noheader,nounits` output, one line per GPU per reading
// (a header line, if present, is skipped). Seconds count from the first
// line's timestamp. A line that is not six fields, or whose values do not
// parse, is an error naming its line: a reading that cannot be read is
// not a cool GPU.
func ParseSamples(data []byte) ([]Sample, error) {
	var out []Sample
	var t0 time.Time
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "timestamp") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 6 {
			return nil, fmt.Errorf("line %d: %d fields, want 6 (%s)", n+1, len(f), SampleQuery)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		at, err := time.Parse(sampleTime, f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: timestamp %q", n+1, f[0])
		}
		if t0.IsZero() {
			t0 = at
		}
		temp, err1 := strconv.Atoi(f[3])
		clk, err2 := strconv.Atoi(f[4])
		mask, err3 := strconv.ParseUint(strings.TrimPrefix(f[5], "0x"), 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("line %d: temperature %q, clock %q or reasons %q is not a number", n+1, f[3], f[4], f[5])
		}
		out = append(out, Sample{Seconds: at.Sub(t0).Seconds(), BusID: f[1], Model: f[2], TempC: temp, SMClockMHz: clk, Throttle: nvmlfacts.ThrottleReasonNames(mask)})
	}
	return out, nil
}
