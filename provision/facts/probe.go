package facts

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/transport"
)

// Script is the facts probe for the resources' declared reads r: one
// POSIX sh script that reads, under the root prefix in $GPUFORM_ROOT,
// everything a Node holds and prints it as marked records. It is exported
// so the CLI can show it (and an operator can audit exactly what gpuform
// runs on their nodes). It is r as shell variables, Resolver, offers.sh
// (the package listing of facts.Available) as the function gpuform_offers,
// then probe.sh, which loops over those variables, as the function
// gpuform_probe, and stream.sh, which runs it and compresses its output
// where the node has gzip. r must pass check (Probe refuses one that does
// not).
func Script(r Reads) string {
	return r.shellVars() + Resolver + "gpuform_offers() {\n" + availableScript + "}\n" +
		"gpuform_probe() {\n" + probeBody + "}\n" + streamScript
}

// ProbeScript is the probe for one set of declared reads, checked and
// built once (about 56 kB of shell), so that the hosts of one command share
// its text instead of each building its own: a command probes every host
// with the same reads. Its zero value is not usable; make one with
// NewProbeScript.
type ProbeScript struct {
	text string
}

// NewProbeScript checks r as Probe does and builds Script(r) once.
func NewProbeScript(r Reads) (*ProbeScript, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return &ProbeScript{text: Script(r)}, nil
}

//go:embed probe.sh
var probeBody string

//go:embed stream.sh
var streamScript string

// Resolver is the POSIX sh code (resolve.sh) that resolves a path inside
// the root prefix $R as chroot would: the probe reads, and every step that
// writes a file writes, only what it resolves to. It defines the shell
// functions resolve_in_root, resolve_path and resolve_dir and the variables they use (all starting "_").
//
//go:embed resolve.sh
var Resolver string

// Options tune one probe run.
type Options struct {
	// Root is the root prefix to probe under; "" probes the node itself
	// (or, on a sim transport, the simulated root it was created with).
	Root string
	// HostRoot says Root is the node's own root filesystem mounted into
	// the machine the probe runs on (a pod's read-only hostPath /, as
	// verify --local -host-root reads it), not a simulated node: the
	// node's files are read under Root, and the commands the probe asks
	// (nvidia-smi, ipmitool, rpm --root) are this machine's own, never a
	// binary under Root.
	HostRoot bool
	// Become runs the probe with the transport's privilege escalation.
	// Everything the probe reads is world-readable on stock distributions;
	// Become is for hardened nodes (e.g. /etc/docker mode 0700).
	Become bool
	// ImageDirs are the image_dir directories the host's spec will pull
	// into: the probe reports the owner and mode of each (of its nearest
	// existing parent when it does not exist yet) and of every directory
	// above it (ImageDirTrust), so that plan can refuse one other users
	// may write to before apply pulls anything. Each must be a clean
	// absolute path of [A-Za-z0-9._/-]; the probe skips any other.
	ImageDirs []string
	// Fabric asks for the GPUs' NVLink fabric registration (Node.Fabric),
	// through nvidia-smi -q: for a node block whose nvlink_domain is read
	// from the node. Off, the probe runs no nvidia-smi.
	Fabric bool
	// IMEXStatus asks for IMEX's own view of its domain (Node.IMEXStatus),
	// nvidia-imex-ctl -N bounded to 20 s: for verify of a node that runs
	// IMEX. Off, the probe runs no nvidia-imex-ctl.
	IMEXStatus bool
	// Packages are the packages the host's spec installs: the probe asks
	// the package manager which versions of them its repositories offer
	// (Node.Offers), from the metadata the host has, in the same command.
	// Each must be a package name; Probe refuses any other.
	Packages []string
	// Reads are what the resources read back (resource.Reads(): their
	// config files, managed files and directories, units). The probe
	// reads exactly these besides the node facts it always reads; a
	// declaration that is not a clean path or unit name is refused.
	Reads Reads
	// Script, when set, is the probe already built for the reads
	// (NewProbeScript), shared by every host of a command; Reads is then
	// not used. Nil builds the probe from Reads for this probe alone.
	Script *ProbeScript
}

// Probe runs the facts probe on the node behind t in exactly one command and
// parses its output. A transport failure, a non-zero exit, or output that
// does not parse is returned as a *transport.HostError for t.Host().
func Probe(ctx context.Context, t transport.Transport, opts Options) (*Node, error) {
	nonce, err := newNonce()
	if err != nil {
		return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: err}
	}
	env := map[string]string{"GPUFORM_PROBE_NONCE": nonce}
	if opts.Root != "" {
		env["GPUFORM_ROOT"] = opts.Root
		if opts.HostRoot {
			env["GPUFORM_PROBE_HOST_ROOT"] = "1"
		}
	}
	if len(opts.ImageDirs) > 0 {
		env["GPUFORM_PROBE_IMAGE_DIRS"] = strings.Join(opts.ImageDirs, " ")
	}
	if opts.Fabric {
		env["GPUFORM_PROBE_FABRIC"] = "1"
	}
	if opts.IMEXStatus {
		env["GPUFORM_PROBE_IMEX_STATUS"] = "1"
	}
	if len(opts.Packages) > 0 {
		if err := checkPackageNames(opts.Packages); err != nil {
			return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: err}
		}
		env["GPUFORM_PROBE_PACKAGES"] = strings.Join(opts.Packages, " ")
	}
	script := opts.Script
	if script == nil {
		var err error
		if script, err = NewProbeScript(opts.Reads); err != nil {
			return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: err}
		}
	}
	res, err := t.Run(ctx, transport.Command{Script: script.text, Become: opts.Become, Env: env})
	if err != nil {
		if he := (*transport.HostError)(nil); errors.As(err, &he) {
			return nil, err
		}
		return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: err}
	}
	if res.ExitCode != 0 {
		return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: fmt.Errorf("probe exited %d: %s", res.ExitCode, text.FirstLine(string(res.Stderr)))}
	}
	n, err := Parse(res.Stdout)
	if err != nil {
		if msg := strings.TrimSpace(string(res.Stderr)); msg != "" {
			err = fmt.Errorf("%w (stderr: %s)", err, text.FirstLine(msg))
		}
		return nil, &transport.HostError{Host: t.Host(), Op: "probe", Err: err}
	}
	n.Host = t.Host()
	return n, nil
}

// newNonce returns a random marker prefix, so that no file content the probe
// prints can be mistaken for a record boundary.
func newNonce() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}
