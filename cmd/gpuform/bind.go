package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/bind"
)

func newBindCommand(s Streams) *cobra.Command {
	var (
		specDir, nodeName, bindingFile string
		gpu                            int
		cudaVisible, verbose           bool
		sf                             specFlags
	)
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
			var b *bind.Binding
			var err error
			if specDir != "" {
				b, err = bindingFromSpec(s, &sf, specDir, nodeName)
			} else {
				if nodeName != "" {
					return errors.New("-node works only with -spec: the recorded binding is this node's")
				}
				b, err = recordedBinding(bindingFile)
			}
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("gpu") {
				gpu = -1
			} else if gpu < 0 {
				return fmt.Errorf("-gpu %d: a GPU index is a whole number ≥ 0", gpu)
			}
			l, err := bind.Prepare(b, s.Environ, bind.Options{GPU: gpu, CUDAVisibleDevices: cudaVisible}, args)
			if err != nil {
				return err
			}
			if verbose {
				fmt.Fprintf(s.Err, "gpuform bind: %s → %s\n", l.Why, l.GPU)
				if len(l.CPUs) > 0 {
					fmt.Fprintf(s.Err, "gpuform bind: CPU affinity %s, memory bound to NUMA node %d\n", l.GPU.CPUs, l.GPU.NUMA)
				} else {
					fmt.Fprintf(s.Err, "gpuform bind: GPU %d has no NUMA node in the binding: CPU affinity and memory policy left as they are\n", l.GPU.Index)
				}
				for _, kv := range l.Set {
					fmt.Fprintf(s.Err, "gpuform bind: %s\n", kv)
				}
				fmt.Fprintf(s.Err, "gpuform bind: exec %s\n", strings.Join(l.Argv, " "))
			}
			launch := s.launch
			if launch == nil {
				launch = bind.Exec
			}
			return launch(l)
		},
	}
	fs := cmd.Flags()
	// Everything after the command's name is the command's.
	fs.SetInterspersed(false)
	fs.StringVar(&specDir, "spec", "", "compute the binding from the spec in DIR instead of reading the recorded one")
	fs.StringVar(&nodeName, "node", "", "with -spec, the node block this machine belongs to (default: the one listing this host name, or the only one)")
	fs.StringVar(&bindingFile, "binding", bind.File, "the recorded binding to read")
	fs.IntVar(&gpu, "gpu", 0, "bind to GPU N instead of the local rank's")
	fs.BoolVar(&cudaVisible, "cuda-visible-devices", false, "also set CUDA_VISIBLE_DEVICES to the GPU (and CUDA_DEVICE_ORDER=PCI_BUS_ID), so the command sees only it")
	fs.BoolVarP(&verbose, "verbose", "v", false, "say on stderr what is bound and set before running the command")
	sf.register(fs)
	return cmd
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
