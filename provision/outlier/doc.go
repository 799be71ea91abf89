// Package outlier compares devices with their peers: a GPU whose value of
// some metric (clock under load, PCIe link, temperature, power, bandwidth)
// is more than a margin worse than the median of the same GPU model in the
// same node, or across the fleet, is flagged by host and bus id — even when
// it passes every fixed floor. Slow-but-not-failed devices pass floors and
// drag a whole job down; fleet validators (gpu-fryer, DCGM 4.5's tolerance
// against the system mean, SuperBench's variance rules) compare with peers
// for that reason.
//
// Package outlier judges numbers it is given and nothing else: it reads no
// host, knows no floors and decides no exit code. Its input is a flat list
// of Values so any producer (verify's NVML facts, bench's measurements,
// multi-node pair results) can feed it.
package outlier
