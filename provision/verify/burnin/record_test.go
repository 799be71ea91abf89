package burnin

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	t0   = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	node = Identity{Driver: "570.133.20", GPUs: []GPU{
		{BusID: "00000000:18:00.0", UUID: "GPU-aaaa", Serial: "1650923000001"},
		{BusID: "00000000:2A:00.0", UUID: "GPU-bbbb", Serial: "1650923000002"},
	}}
)

func passed() []Finding {
	return []Finding{{Check: "burnin.thermal", Status: StatusPass, Message: "ok"}}
}

func encode(t *testing.T, r Record) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJudge(t *testing.T) {
	t.Parallel()
	good := NewRecord(node, t0, t0.Add(4*time.Hour), 4*time.Hour, passed())
	failed := NewRecord(node, t0, t0.Add(4*time.Hour), 4*time.Hour, []Finding{{Check: "burnin.nccl", Status: StatusFail}, {Check: "burnin.thermal", Status: StatusPass}})
	swapped := node
	swapped.GPUs = []GPU{node.GPUs[0], {BusID: "00000000:2A:00.0", UUID: "GPU-cccc", Serial: "1650923000099"}}
	fewer := node
	fewer.GPUs = node.GPUs[:1]
	newDriver := node
	newDriver.Driver = "575.51.03"
	fin := t0.Add(4 * time.Hour)
	cases := []struct {
		name   string
		data   []byte
		found  bool
		now    time.Time
		maxAge time.Duration
		cur    Identity
		want   Reason
		msg    string
	}{
		{"valid", encode(t, good), true, fin.Add(24 * time.Hour), 0, node, ReasonValid, "valid until 2026-12-01T12:00:00Z"},
		{"missing", nil, false, fin, 0, node, ReasonMissing, "no burn-in record"},
		{"empty file", []byte{}, true, fin, 0, node, ReasonCorrupt, "corrupt"},
		{"truncated", encode(t, good)[:40], true, fin, 0, node, ReasonCorrupt, "corrupt"},
		{"not json", []byte("passed=true\n"), true, fin, 0, node, ReasonCorrupt, "corrupt"},
		{"two documents", append(encode(t, good), encode(t, good)...), true, fin, 0, node, ReasonCorrupt, "data after the record"},
		{"over the bound", append(encode(t, good), make([]byte, MaxRecordBytes)...), true, fin, 0, node, ReasonCorrupt, "over 65536 bytes"},
		{"no version", []byte(`{"passed":true,"started":"2026-11-01T08:00:00Z","finished":"2026-11-01T12:00:00Z"}`), true, fin, 0, node, ReasonCorrupt, "no format_version"},
		{"newer version", []byte(`{"format_version":2,"passed":true,"started":"2026-11-01T08:00:00Z","finished":"2026-11-01T12:00:00Z"}`), true, fin, 0, node, ReasonCorrupt, "newer"},
		{"finished before started", []byte(`{"format_version":1,"passed":true,"started":"2026-11-01T12:00:00Z","finished":"2026-11-01T08:00:00Z"}`), true, fin, 0, node, ReasonCorrupt, "are not a run"},
		{"failed", encode(t, failed), true, fin, 0, node, ReasonFailed, "failed (burnin.nccl)"},
		{"passed with no findings is failed", encode(t, NewRecord(node, t0, fin, time.Hour, nil)), true, fin, 0, node, ReasonFailed, "no finding recorded"},
		{"expired at default max_age", encode(t, good), true, fin.Add(DefaultMaxAge), 0, node, ReasonExpired, "expired at 2026-12-01T12:00:00Z (max_age 720h0m0s)"},
		{"a second before expiry", encode(t, good), true, fin.Add(DefaultMaxAge - time.Second), 0, node, ReasonValid, "passed"},
		{"expired at spec max_age", encode(t, good), true, fin.Add(49 * time.Hour), 48 * time.Hour, node, ReasonExpired, "max_age 48h0m0s"},
		{"clock skew within bound", encode(t, good), true, fin.Add(-MaxClockSkew), 0, node, ReasonValid, "passed"},
		{"future-dated", encode(t, good), true, fin.Add(-MaxClockSkew - time.Second), 0, node, ReasonFuture, "after now"},
		{"future-dated beats expiry", encode(t, good), true, t0.Add(-time.Hour), time.Nanosecond, node, ReasonFuture, "clock"},
		{"driver changed", encode(t, good), true, fin, 0, newDriver, ReasonDriverChanged, "ran on driver 570.133.20, the node has 575.51.03"},
		{"GPU swapped", encode(t, good), true, fin, 0, swapped, ReasonGPUsChanged, "00000000:2A:00.0 is GPU-cccc (serial 1650923000099), the burn-in ran on GPU-bbbb"},
		{"GPU gone", encode(t, good), true, fin, 0, fewer, ReasonGPUsChanged, "00000000:2A:00.0 is gone"},
		{"GPU added", encode(t, NewRecord(fewer, t0, fin, time.Hour, passed())), true, fin, 0, node, ReasonGPUsChanged, "was not burnt in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v := Judge(c.data, c.found, c.now, c.maxAge, c.cur)
			if v.Reason != c.want || v.OK != (c.want == ReasonValid) || !strings.Contains(v.Message, c.msg) {
				t.Errorf("Judge = %v %s %q, want %s containing %q", v.OK, v.Reason, v.Message, c.want, c.msg)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	r := NewRecord(node, t0, t0.Add(time.Hour), time.Hour, passed())
	got, err := Parse(encode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Passed || got.Identity.Driver != "570.133.20" || len(got.Identity.GPUs) != 2 || got.Identity.GPUs[1].Serial != "1650923000002" || got.DurationSeconds != 3600 {
		t.Errorf("round trip lost fields: %+v", got)
	}
	if _, err := Parse([]byte("{")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Parse of a cut record: %v, want ErrCorrupt", err)
	}
}
