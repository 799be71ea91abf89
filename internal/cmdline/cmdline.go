// Package cmdline reads the command lines a spec gives for nccl-tests
// (nccl_test { command }): it splits them into words the way a POSIX shell
// would, refusing shell syntax; separates environment assignments; finds the
// multi-host launcher behind wrappers such as timeout(1) and env(1); and
// tells whether the command forces NCCL onto its socket transport; and
// rewrites a launcher command to run on given hosts (ForHosts), which is
// how verify runs a node group's test on pairs of nodes. Lint
// (which judges the command before any host is reached) and verify (which
// runs it) read commands the same way through it.
//
// It runs nothing and knows nothing of NCCL's output (provision/verify/nccltest
// reads that).
package cmdline

import (
	"fmt"
	"path"
	"strings"
	"unicode"
)

// Split splits a command line into words the way a POSIX shell
// splits simple words and quotes, without expansion: single quotes, double
// quotes and backslash escapes are honoured; $, `, ;, |, &, <, >, (, ) are
// refused so that a spec cannot smuggle shell syntax into a remote command.
func Split(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\`, s[i+1]) >= 0 {
					i++
				} else if s[i] == '$' || s[i] == '`' {
					return nil, fmt.Errorf("shell expansion (%c) is not allowed in %q", s[i], s)
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote in %q", s)
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		case strings.IndexByte("$`;|&<>()", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q is not allowed in a test command (%q); write the command as plain words", c, s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// SplitEnv separates leading NAME=value words from the program and its arguments.
func SplitEnv(words []string) (env, argv []string) {
	for i, w := range words {
		name, _, ok := strings.Cut(w, "=")
		if !ok || !validEnvName(name) {
			return words[:i], words[i:]
		}
	}
	return words, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// isLauncher reports whether prog starts one job's ranks on several hosts.
func isLauncher(prog string) bool {
	switch prog {
	case "mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "srun", "jsrun", "aprun":
		return true
	}
	return false
}

// wrapper is a program that runs the next word of the command line as the
// program, after options of its own.
type wrapper struct {
	// valued lists the options followed by a separate value word.
	valued []string
	// positional is how many operands come before the program
	// (timeout's DURATION, taskset's mask).
	positional int
}

// wrappers are the wrappers Launcher looks through, by program name.
func wrappers() map[string]wrapper {
	return map[string]wrapper{
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
}

// Launcher returns the multi-host launcher a test command starts with
// ("mpirun", "srun", …), looking past environment assignments
// (NCCL_IB_DISABLE=0 mpirun …), wrappers such as timeout(1), env(1) and
// nice(1) with their options, and a directory in front of the program
// (/usr/bin/mpirun). It returns "" when the program is not a launcher or
// the command cannot be split.
func Launcher(cmd string) string {
	words, err := Split(cmd)
	if err != nil {
		return ""
	}
	prog, _ := program(words)
	if isLauncher(prog) {
		return prog
	}
	return ""
}

// program skips environment assignments and wrappers and returns the base
// name of the program that really runs and the words after it.
func program(words []string) (string, []string) {
	for len(words) > 0 {
		_, rest := SplitEnv(words)
		if len(rest) == 0 {
			return "", nil
		}
		base := path.Base(rest[0])
		w, ok := wrappers()[base]
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
		// env(1) takes assignments after its options; SplitEnv at the
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
	words, err := Split(cmd)
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
