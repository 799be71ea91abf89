// Package burnin is verify's burn-in tier: what a burn-in found on a node
// (Evaluate: DCGM's long diagnostics, a sustained load's temperatures and
// clocks against the GPU's peers, long NCCL runs' #wrong and bandwidth
// variance across iterations, PCIe AER and NVLink error counters before
// and after), and the record of it kept on the node (Record, at Path)
// that verify -require-burnin judges (Judge): a node whose burn-in is
// missing, corrupt, failed, expired, dated in the future, or taken with
// another driver or other GPUs is refused. It runs nothing and reaches no
// host: the runner brings the data and the bytes of the record.
package burnin
