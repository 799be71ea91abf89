package cmdline

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// launcherFlags says how one family of launchers is told its hosts and
// rank counts.
type launcherFlags struct {
	// hosts are the options naming hosts or a host file (value follows).
	hosts []string
	// total are the options giving the total rank count.
	total []string
	// nodes are the options giving the node count.
	nodes []string
	// perNode are the options giving ranks per node.
	perNode []string
}

func flagsOf(launcher string) (launcherFlags, bool) {
	switch launcher {
	case "mpirun", "mpiexec", "orterun", "prterun":
		// Open MPI (mpirun(1): -H/--host/-host, --hostfile, -np/-n/-c,
		// -N/--npernode); MPICH's mpiexec takes -host/-hosts, -f and -ppn.
		return launcherFlags{
			hosts:   []string{"-H", "--host", "-host", "-hosts", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "--default-hostfile", "-f"},
			total:   []string{"-np", "--np", "-n", "-c"},
			perNode: []string{"-N", "-npernode", "--npernode", "-ppn", "-perhost"},
		}, true
	case "mpiexec.hydra":
		return launcherFlags{
			hosts:   []string{"-host", "-hosts", "-f", "-hostfile", "-machinefile"},
			total:   []string{"-np", "-n"},
			perNode: []string{"-ppn", "-perhost"},
		}, true
	case "srun":
		return launcherFlags{
			hosts:   []string{"-w", "--nodelist", "-F", "--nodefile"},
			total:   []string{"-n", "--ntasks"},
			nodes:   []string{"-N", "--nodes"},
			perNode: []string{"--ntasks-per-node"},
		}, true
	}
	return launcherFlags{}, false
}

// launch is a command line taken apart around its launcher.
type launch struct {
	words []string
	// at is the launcher's index; test the first word after it that is
	// an nccl-tests program (*_perf), which ends the launcher's options.
	at, test int
	name     string
	flags    launcherFlags
}

func parseLaunch(cmd string) (launch, error) {
	words, err := Split(cmd)
	if err != nil {
		return launch{}, err
	}
	prog, rest := program(words)
	if !isLauncher(prog) {
		return launch{}, fmt.Errorf("%q is not started by a multi-host launcher (mpirun, mpiexec, srun)", cmd)
	}
	l := launch{words: words, at: len(words) - len(rest) - 1, name: prog, test: -1}
	var ok bool
	if l.flags, ok = flagsOf(prog); !ok {
		return launch{}, fmt.Errorf("gpuform cannot choose the hosts of a %s command; write it with mpirun or srun", prog)
	}
	for i := l.at + 1; i < len(words); i++ {
		if strings.HasSuffix(path.Base(words[i]), "_perf") {
			l.test = i
			break
		}
	}
	if l.test < 0 {
		// The launcher's options cannot be told from the test's without
		// the test program: nccl-tests' -n is iterations, srun's is tasks.
		return launch{}, fmt.Errorf("%q names no nccl-tests program (*_perf) after %s", cmd, prog)
	}
	return l, nil
}

// option finds opt among the launcher's options: "-np 16" and "--np=16"
// alike. It returns its value and the indexes of the words it spans.
func (l launch) option(names []string) (value string, span []int, found bool) {
	for i := l.at + 1; i < l.test; i++ {
		w := l.words[i]
		for _, n := range names {
			switch {
			case w == n && i+1 < l.test:
				value, span, found = l.words[i+1], append(span, i, i+1), true
			case strings.HasPrefix(w, n+"=") && strings.HasPrefix(n, "--"):
				value, span, found = w[len(n)+1:], append(span, i), true
			}
		}
	}
	return value, span, found
}

// NamesHosts reports whether a launcher command chooses its own hosts (a
// host list or host file).
func NamesHosts(cmd string) bool {
	_, _, ok := HostList(cmd)
	return ok
}

// HostList returns the launcher option of cmd that chooses its hosts (a
// host list such as mpirun's -H or srun's -w, or a host file) and its
// value as written: "-H", "gpu01,gpu02". ok is false when the command is
// not started by a launcher or names no hosts.
func HostList(cmd string) (opt, value string, ok bool) {
	l, err := parseLaunch(cmd)
	if err != nil {
		return "", "", false
	}
	for _, name := range l.flags.hosts {
		if v, _, found := l.option([]string{name}); found {
			return name, v, true
		}
	}
	return "", "", false
}

// IsHostFile reports whether opt, as HostList returns it, names a file of
// hosts rather than the hosts themselves.
func IsHostFile(opt string) bool {
	switch strings.TrimLeft(opt, "-") {
	case "hostfile", "machinefile", "default-hostfile", "f", "F", "nodefile":
		return true
	}
	return false
}

// ForHosts rewrites a multi-host test command to run on exactly hosts:
// the launcher's host list, host file, node count and rank counts are
// replaced by the hosts given, each running the command's ranks per node
// (its -N/--npernode/-ppn/--ntasks-per-node, else the total rank count
// over nodes ranks, else gpusPerNode). Everything else — environment,
// wrappers, the test and its options — is kept as it was, so a pair of
// nodes runs the same test as the whole group.
//
// Open MPI's mpirun/mpiexec get "-np N -H a:K,b:K", mpiexec.hydra
// "-np N -ppn K -hosts a,b", srun "-N 2 -n N --ntasks-per-node=K -w a,b".
// nodes is the node count the command was written for (0: unknown), used
// to read ranks per node from a total rank count.
func ForHosts(cmd string, hosts []string, nodes, gpusPerNode int) (string, error) {
	if len(hosts) == 0 {
		return "", fmt.Errorf("no hosts to run %q on", cmd)
	}
	l, err := parseLaunch(cmd)
	if err != nil {
		return "", err
	}
	drop := map[int]bool{}
	ppn := 0
	if v, span, ok := l.option(l.flags.perNode); ok {
		ppn, _ = strconv.Atoi(v)
		for _, i := range span {
			drop[i] = true
		}
	}
	if v, span, ok := l.option(l.flags.total); ok {
		if n, err := strconv.Atoi(v); err == nil && ppn == 0 && nodes > 0 && n%nodes == 0 {
			ppn = n / nodes
		}
		for _, i := range span {
			drop[i] = true
		}
	}
	for _, names := range [][]string{l.flags.hosts, l.flags.nodes} {
		if _, span, ok := l.option(names); ok {
			for _, i := range span {
				drop[i] = true
			}
		}
	}
	if ppn <= 0 {
		ppn = gpusPerNode
	}
	if ppn <= 0 {
		return "", fmt.Errorf("cannot tell how many ranks %q runs per node: give %s its per-node count", cmd, l.name)
	}
	total := strconv.Itoa(ppn * len(hosts))
	var add []string
	switch l.name {
	case "srun":
		add = []string{"-N", strconv.Itoa(len(hosts)), "-n", total, "--ntasks-per-node=" + strconv.Itoa(ppn), "-w", strings.Join(hosts, ",")}
	case "mpiexec.hydra":
		add = []string{"-np", total, "-ppn", strconv.Itoa(ppn), "-hosts", strings.Join(hosts, ",")}
	default:
		slots := make([]string, len(hosts))
		for i, h := range hosts {
			slots[i] = h + ":" + strconv.Itoa(ppn)
		}
		add = []string{"-np", total, "-H", strings.Join(slots, ",")}
	}
	var out []string
	for i, w := range l.words {
		if drop[i] {
			continue
		}
		out = append(out, w)
		if i == l.at {
			out = append(out, add...)
		}
	}
	return Join(out), nil
}

// Join writes words as one command line that Split reads back as the same
// words: a word with anything but letters, digits and -_./=,:@+% is put in
// single quotes.
func Join(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quote(w)
	}
	return strings.Join(out, " ")
}

func quote(w string) string {
	if w == "" {
		return "''"
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@+%", r)) {
			if strings.ContainsRune(w, '\'') {
				return `"` + strings.ReplaceAll(strings.ReplaceAll(w, `\`, `\\`), `"`, `\"`) + `"`
			}
			return "'" + w + "'"
		}
	}
	return w
}
