// Package nccltest runs NVIDIA nccl-tests (all_reduce_perf and friends) on a
// node and reads their output: every text layout nccl-tests has printed
// since 2021 (the pre-2.13 `error` column, the `#wrong` column, the blank
// redop of old alltoall builds, the Group column, both bus id shapes,
// launcher prefixes from srun/OpenMPI, NCCL and CUDA failure lines, runs that
// stopped before their footer).
//
// A run is judged on the busbw of its largest message size (the smaller of
// out-of-place and in-place), on #wrong being 0 in every row and on the
// "Out of bounds values : 0 OK" footer. It is never judged on "Avg bus
// bandwidth", which averages every size of a sweep and sits far below the
// bandwidth a node really reaches.
//
// This package does not decide floors: callers pass the floor (from a spec
// or the threshold catalogue in provision/verify).
package nccltest
