// Package kb is gpuform's NVIDIA compatibility knowledge base: the tables
// of driver branches, CUDA toolkit driver minimums, GPU models and
// architectures, NCCL builds, NGC PyTorch and Triton images, container
// toolkit releases, DCGM requirements and distro package names, embedded as
// TSV data files and parsed once into typed, read-only answers.
//
// Every answer carries the Fact it rests on: the public source, the data file
// and line, and a Status (confirmed, derived, secondary, unconfirmed). Lint
// rules may raise an error only when Status.CanBeError reports true; anything
// weaker is a warning that says so. Lookups return a found flag so that "not
// in the knowledge base" (a version newer than the tables) is never confused
// with "incompatible".
//
// It is the one copy of every table, used by lint's rules, by lockfile (which
// installed packages carry a component's release) and by verify (the NCCL
// floors it judges nccl-tests by): a test fails if a table exists twice in
// the repository. It is a top-level package beside spec, below both lint
// and provision (docs/design.md, "Data flows one way"), so the two read the
// same tables without an edge between them. Of gpuform it imports only
// spec's Component, the one vocabulary of components shared by the lock
// file, the package tables and the plan's resources (TestImports).
//
// kb has no package-level knowledge base: the CLI parses the embedded
// tables once (Load) and passes the *KB down through each package's
// options, so a test builds its own and a command that needs no table
// parses none.
//
// kb is not a lint rule set and reads no HCL or spec: it answers
// questions about versions and hardware. It never reads the clock (callers pass
// the date for end-of-life questions) and never touches the network.
package kb
