package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/fleet"
)

func (f *connectFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.acceptNew, "accept-new-host-keys", false, "record the host key of hosts not yet in known_hosts (like StrictHostKeyChecking=accept-new); a changed key is always refused")
	fs.StringArrayVar(&f.knownHosts, "known-hosts", nil, "known_hosts file to use instead of ssh_config's (repeatable)")
	fs.StringArrayVar(&f.identities, "identity", nil, "private key file to try before ssh-agent and ssh_config's keys (repeatable)")
	fs.StringVar(&f.sshConfig, "ssh-config", "", "ssh_config file (default ~/.ssh/config; \"none\" reads none)")
	fs.IntVar(&f.parallelism, "parallelism", fleet.DefaultParallelism, "how many hosts to work on at once")
	fs.StringVar(&f.connectTimeout, "connect-timeout", "", "time allowed to connect and log in to each host: seconds as in ssh's ConnectTimeout (5) or a duration (5s) (default 30s)")
	fs.BoolVar(&f.allowLocal, "allow-local", false, "let gpuform run commands on this machine: for local:// hosts, and for verify's nccl-tests on sim:// hosts")
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration like \"30s\"", s)
	}
	return d, nil
}

// parseSeconds reads a time as ssh's ConnectTimeout does, plain seconds
// ("5"), or as a Go duration ("5s", "1m30s").
func parseSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("%q is not a positive number of seconds or a duration like \"30s\"", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a number of seconds (5) or a duration like \"30s\"", s)
	}
	return d, nil
}

// timeoutFlags are the per-command time limits of the commands that probe
// hosts (-probe-timeout) and change them (-step-timeout).
type timeoutFlags struct {
	probe string
	step  string
}

func (f *timeoutFlags) registerProbe(fs *pflag.FlagSet) {
	fs.StringVar(&f.probe, "probe-timeout", "", "time allowed to connect to and probe each host (default: the inventory's probe_timeout, else 2m)")
}

func (f *timeoutFlags) registerStep(fs *pflag.FlagSet) {
	fs.StringVar(&f.step, "step-timeout", "", "time allowed for each apply step; a step still running then is stopped (default: rollout { step_timeout }, else 30m)")
}

// check parses the flags once, before any host is reached.
func (f *timeoutFlags) check() error {
	if f.probe != "" {
		if _, err := parseDuration(f.probe); err != nil {
			return fmt.Errorf("-probe-timeout: %w", err)
		}
	}
	if f.step != "" {
		if _, err := parseDuration(f.step); err != nil {
			return fmt.Errorf("-step-timeout: %w", err)
		}
	}
	return nil
}

// probeFlag is the -probe-timeout flag; zero leaves it to the spec.
func (f *timeoutFlags) probeFlag() time.Duration {
	if f.probe == "" {
		return 0
	}
	d, _ := parseDuration(f.probe)
	return d
}

// stepLimit is the -step-timeout flag; zero leaves it to the spec.
func (f *timeoutFlags) stepLimit() time.Duration {
	d, _ := parseDuration(f.step)
	if f.step == "" {
		return 0
	}
	return d
}
