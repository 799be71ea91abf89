package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/bind"
)

// bindArguments are the arguments of gpuform bind.
type bindArguments struct {
	// SpecDir is -spec: the spec the binding is computed from, "" to read
	// the recorded one.
	SpecDir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Node is -node: with -spec, the node block this machine belongs to.
	Node string
	// BindingFile is -binding: the recorded binding.
	BindingFile string
	// GPU is -gpu: the GPU to bind to, -1 for the local rank's.
	GPU int
	// CUDAVisibleDevices is -cuda-visible-devices.
	CUDAVisibleDevices bool
	// Verbose is -verbose: say what is bound and set before running.
	Verbose bool
	// Command is the command to run and its arguments.
	Command []string

	gpu      int
	gpuGiven bool
}

func (a *bindArguments) register(fs *pflag.FlagSet) {
	// Everything after the command's name is the command's.
	fs.SetInterspersed(false)
	fs.StringVar(&a.SpecDir, "spec", "", "compute the binding from the spec in DIR instead of reading the recorded one")
	fs.StringVar(&a.Node, "node", "", "with -spec, the node block this machine belongs to (default: the one listing this host name, or the only one)")
	fs.StringVar(&a.BindingFile, "binding", bind.File, "the recorded binding to read")
	fs.IntVar(&a.gpu, "gpu", 0, "bind to GPU N instead of the local rank's")
	fs.BoolVar(&a.CUDAVisibleDevices, "cuda-visible-devices", false, "also set CUDA_VISIBLE_DEVICES to the GPU (and CUDA_DEVICE_ORDER=PCI_BUS_ID), so the command sees only it")
	fs.BoolVarP(&a.Verbose, "verbose", "v", false, "say on stderr what is bound and set before running the command")
	a.Spec.register(fs)
}

// finish refuses -node without -spec and takes -gpu and the command. A
// negative -gpu is refused by the work, after the binding is read, where
// bind has always reported it.
func (a *bindArguments) finish(fs *pflag.FlagSet, args []string) error {
	if a.SpecDir == "" && a.Node != "" {
		return errors.New("-node works only with -spec: the recorded binding is this node's")
	}
	a.gpuGiven = fs.Changed("gpu")
	a.GPU = -1
	if a.gpuGiven {
		a.GPU = a.gpu
	}
	a.Command = args
	return nil
}

// parseBindArguments parses gpuform bind's command line (after "bind").
func parseBindArguments(args []string) (*bindArguments, error) {
	a := &bindArguments{}
	return a, parseArguments(args, a.register, cobra.ArbitraryArgs, a.finish)
}

func newBindCommand(s Streams) *cobra.Command {
	a := &bindArguments{}
	cmd := &cobra.Command{
		Use:   "bind [flags] -- COMMAND [ARGS...]",
		Short: "Run a command bound to its GPU's NUMA node and NIC",
		Long: `Run COMMAND bound to one GPU's share of the node: its CPUs (sched_setaffinity),
its NUMA node's memory (set_mempolicy MPOL_BIND), and its paired NIC
(NCCL_IB_HCA, UCX_NET_DEVICES). Run one per GPU, under a launcher:

  torchrun --nproc-per-node 8 --no-python gpuform bind -- python train.py
  srun --ntasks-per-node 8 gpuform bind -- python train.py
  mpirun -np 8 gpuform bind -- ./app

The GPU is the local rank's (LOCAL_RANK, SLURM_LOCALID,
OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID: rank r gets the r-th GPU of
the binding), or -gpu N. The binding is the one apply recorded in
` + bind.File + `, or, with -spec, computed from the spec and this
machine's NUMA nodes.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			l, err := makeLaunch(s, a)
			if err != nil {
				return err
			}
			if a.Verbose {
				bindView{s}.Launch(l)
			}
			launch := s.launch
			if launch == nil {
				launch = bind.Exec
			}
			return launch(l)
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// makeLaunch is gpuform bind's work: it reads the recorded binding or
// computes it from the spec, and returns how the command is to be
// launched (the GPU, its CPUs and memory, the environment it gets).
func makeLaunch(s Streams, a *bindArguments) (*bind.Launch, error) {
	var b *bind.Binding
	var err error
	if a.SpecDir != "" {
		b, err = bindingFromSpec(s, &a.Spec, a.SpecDir, a.Node)
	} else {
		b, err = recordedBinding(a.BindingFile)
	}
	if err != nil {
		return nil, err
	}
	if a.gpuGiven && a.GPU < 0 {
		return nil, fmt.Errorf("-gpu %d: a GPU index is a whole number ≥ 0", a.GPU)
	}
	return bind.Prepare(b, s.Environ, bind.Options{GPU: a.GPU, CUDAVisibleDevices: a.CUDAVisibleDevices}, a.Command)
}

// bindView says on standard error (-verbose) what bind binds and sets.
type bindView struct{ s Streams }

// Launch says what l binds and sets, and what it runs.
func (v bindView) Launch(l *bind.Launch) {
	fmt.Fprintf(v.s.Err, "gpuform bind: %s → %s\n", l.Why, l.GPU)
	if len(l.CPUs) > 0 {
		fmt.Fprintf(v.s.Err, "gpuform bind: CPU affinity %s, memory bound to NUMA node %d\n", l.GPU.CPUs, l.GPU.NUMA)
	} else {
		fmt.Fprintf(v.s.Err, "gpuform bind: GPU %d has no NUMA node in the binding: CPU affinity and memory policy left as they are\n", l.GPU.Index)
	}
	for _, kv := range l.Set {
		fmt.Fprintf(v.s.Err, "gpuform bind: %s\n", kv)
	}
	fmt.Fprintf(v.s.Err, "gpuform bind: exec %s\n", strings.Join(l.Argv, " "))
}

// recordedBinding reads the binding apply wrote on this node.
func recordedBinding(path string) (*bind.Binding, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no binding recorded at %s: apply a spec with numa { bind } or affinity { gpu_nic } to this node, or compute it with -spec DIR", path)
	}
	if err != nil {
		return nil, err
	}
	b, err := bind.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// bindingFromSpec computes this machine's binding from a spec: the node
// block from -node, this host's name, or the only one, and the CPUs of
// this machine's NUMA nodes.
func bindingFromSpec(s Streams, sf *specFlags, dir, nodeName string) (*bind.Binding, error) {
	cfg, diags := sf.load(s, dir)
	if diags.HasErrors() {
		writeDiags(s, diags, cfg)
		return nil, exitError{ExitFailed}
	}
	th, err := localTarget(cfg, nodeName)
	if err != nil {
		return nil, err
	}
	b, err := bind.Compute(th.Node, bind.SysCPULists("/"))
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", th.Node.Name, err)
	}
	if b == nil {
		return nil, fmt.Errorf("node %q binds nothing: add numa { bind { gpus = [...], node = N } } or affinity { gpu_nic = {...} } to it", th.Node.Name)
	}
	return b, nil
}
