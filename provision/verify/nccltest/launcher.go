package nccltest

import (
	"path"
	"strings"
)

// launchers are the programs that start one job's ranks on several hosts.
var launchers = map[string]bool{
	"mpirun": true, "mpiexec": true, "mpiexec.hydra": true, "orterun": true, "prterun": true,
	"srun": true, "jsrun": true, "aprun": true,
}

// wrappers run the next word of the command line as the program, after
// options of their own; each entry says how many words each option that
// takes a value consumes.
var wrappers = map[string]struct {
	// valued lists the options followed by a separate value word.
	valued []string
	// positional is how many operands come before the program
	// (timeout's DURATION, taskset's mask).
	positional int
}{
	"env":     {valued: []string{"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}},
	"timeout": {valued: []string{"-k", "--kill-after", "-s", "--signal"}, positional: 1},
	"nice":    {valued: []string{"-n", "--adjustment"}},
	"nohup":   {},
	"time":    {valued: []string{"-f", "--format", "-o", "--output"}},
	"stdbuf":  {valued: []string{"-i", "--input", "-o", "--output", "-e", "--error"}},
	"taskset": {positional: 1},
	"chrt":    {positional: 1},
	"ionice":  {valued: []string{"-c", "--class", "-n", "--classdata", "-t"}},
}

// Launcher returns the multi-host launcher a test command starts with
// ("mpirun", "srun", …), looking past environment assignments
// (NCCL_IB_DISABLE=0 mpirun …), wrappers such as timeout(1), env(1) and
// nice(1) with their options, and a directory in front of the program
// (/usr/bin/mpirun). It returns "" when the program is not a launcher or
// the command cannot be split.
func Launcher(cmd string) string {
	words, err := SplitCommand(cmd)
	if err != nil {
		return ""
	}
	prog, _ := program(words)
	if launchers[prog] {
		return prog
	}
	return ""
}

// program skips environment assignments and wrappers and returns the base
// name of the program that really runs and the words after it.
func program(words []string) (string, []string) {
	for len(words) > 0 {
		_, rest := splitEnv(words)
		if len(rest) == 0 {
			return "", nil
		}
		base := path.Base(rest[0])
		w, ok := wrappers[base]
		if !ok {
			return base, rest[1:]
		}
		rest = rest[1:]
		// The wrapper's options, then its operands, then the program.
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			opt := rest[0]
			rest = rest[1:]
			if opt == "--" {
				break
			}
			for _, v := range w.valued {
				if opt == v {
					if len(rest) > 0 {
						rest = rest[1:]
					}
					break
				}
			}
		}
		// env(1) takes assignments after its options; splitEnv at the
		// top of the loop skips them.
		if len(rest) < w.positional {
			return "", nil
		}
		words = rest[w.positional:]
	}
	return "", nil
}

// SocketForced returns the setting in a test command that makes NCCL use
// its TCP socket transport instead of InfiniBand/RoCE verbs — an
// environment assignment NCCL_IB_DISABLE=1 or NCCL_NET=Socket, in front of
// the command, given to env(1), or exported through the launcher
// (mpirun -x NAME=value, srun --export=…,NAME=value, mpiexec -genv NAME
// value) — or "" when it sets none.
func SocketForced(cmd string) string {
	words, err := SplitCommand(cmd)
	if err != nil {
		return ""
	}
	forced := func(name, value string) bool {
		switch name {
		case "NCCL_IB_DISABLE":
			return value == "1"
		case "NCCL_NET":
			return strings.EqualFold(value, "Socket")
		}
		return false
	}
	for i, w := range words {
		// -genv/-env NAME value (MPICH/Intel MPI hydra).
		if (w == "-genv" || w == "-env") && i+2 < len(words) && forced(words[i+1], words[i+2]) {
			return words[i+1] + "=" + words[i+2]
		}
		if _, after, ok := strings.Cut(w, "--export="); ok {
			w = after
		}
		for _, kv := range strings.Split(w, ",") {
			name, value, ok := strings.Cut(kv, "=")
			if ok && forced(name, value) {
				return kv
			}
		}
	}
	return ""
}
