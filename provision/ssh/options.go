package ssh

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults used when neither Options nor ssh_config set a value.
const (
	// DefaultConnectTimeout bounds TCP connect, handshake and authentication
	// of each hop. OpenSSH has no default (it waits for the kernel's TCP
	// timeout, minutes); a fleet run cannot wait that long on one dead host.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultKeepaliveInterval is how often an idle connection is checked.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultKeepaliveCountMax is how many unanswered keepalives in a row
	// declare the connection dead (OpenSSH's ServerAliveCountMax default).
	DefaultKeepaliveCountMax = 3
)

// NoConfig as Options.SSHConfigPath disables reading any ssh_config file.
const NoConfig = "none"

// Options says how to reach a host. Zero fields are taken from ssh_config
// and then from defaults; see the package documentation for precedence.
type Options struct {
	// User to log in as.
	User string
	// Port of the host's sshd.
	Port int
	// IdentityFiles are private key files tried before ssh_config's and the
	// agent's keys.
	IdentityFiles []string
	// KnownHostsFiles replace ssh_config's UserKnownHostsFile and the
	// defaults. New keys (AcceptNewHostKeys) are appended to the first.
	KnownHostsFiles []string
	// AcceptNewHostKeys records the key of a host that has none in
	// known_hosts instead of failing (StrictHostKeyChecking=accept-new). A
	// changed key is refused regardless.
	AcceptNewHostKeys bool
	// ProxyJump lists jump hosts, "[user@]host[:port]", nearest first.
	ProxyJump []string
	// ConnectTimeout bounds connecting to and logging in to each hop.
	ConnectTimeout time.Duration
	// CommandTimeout bounds each Run; zero means no limit beyond the
	// context's.
	CommandTimeout time.Duration
	// KeepaliveInterval is how often keepalives are sent; negative disables
	// them.
	KeepaliveInterval time.Duration
	// KeepaliveCountMax is how many keepalives may go unanswered in a row
	// before the connection is declared dead.
	KeepaliveCountMax int
	// Become is how Command.Become gains privilege: "" (not at all) or
	// "sudo" (sudo -n, never prompting).
	Become string
	// SSHConfigPath is the ssh_config file to read; "" means ~/.ssh/config
	// and NoConfig reads none.
	SSHConfigPath string
	// Getenv reads the environment (SSH_AUTH_SOCK, HOME, USER); nil means
	// os.Getenv. Tests pass their own for hermetic runs.
	Getenv func(string) string
}

// BecomeSudo is the Options.Become value for sudo.
const BecomeSudo = "sudo"

// endpoint is one hop, fully resolved: where to connect, as whom, and how
// to check it.
type endpoint struct {
	alias          string // as written by the operator, for messages and ssh_config
	hostname       string
	port           int
	user           string
	identityFiles  []identityFile
	identitiesOnly bool
	knownHosts     []string // files to check
	recordTo       string   // where accepted keys are written; "" for nowhere
	acceptNew      bool
	hashKnownHosts bool
	connectTimeout time.Duration
	keepalive      time.Duration
	keepaliveMax   int
	proxyJump      []string
	// certificateFiles are CertificateFile's certificates, offered with
	// the matching private key.
	certificateFiles []string
	// identityAgent is the agent socket (IdentityAgent, else
	// SSH_AUTH_SOCK); "" for none.
	identityAgent string
}

type identityFile struct {
	path     string
	explicit bool // named by Options or ssh_config, not a default path
}

// address is HOST:PORT as used for dialing and for known_hosts lookups
// (knownhosts.Normalize turns it into "[host]:port" when the port is not 22).
func (e *endpoint) address() string {
	return net.JoinHostPort(e.hostname, strconv.Itoa(e.port))
}

// env gathers what resolution needs from the local environment.
type env struct {
	getenv    func(string) string
	home      string
	localUser string
}

func newEnv(getenv func(string) string) env {
	e := env{getenv: getenv}
	if e.getenv == nil {
		e.getenv = os.Getenv
	}
	e.home = e.getenv("HOME")
	if e.home == "" && getenv == nil {
		e.home, _ = os.UserHomeDir()
	}
	e.localUser = e.getenv("USER")
	if e.localUser == "" {
		if u, err := user.Current(); err == nil {
			e.localUser = u.Username
		}
	}
	return e
}

// loadConfig reads the ssh_config file. A missing file is no configuration;
// an unreadable or malformed one is an error, as it is for ssh.
func loadConfig(path string, e env) (*sshConfig, error) {
	if path == NoConfig {
		return nil, nil
	}
	if path == "" {
		if e.home == "" {
			return nil, nil
		}
		path = filepath.Join(e.home, ".ssh", "config")
	}
	cfg, err := loadSSHConfig(path, e.home)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Path == path {
			return nil, fmt.Errorf("read ssh config: %w", err)
		}
		return nil, err
	}
	return cfg, nil
}

// splitSpec splits "[user@]host[:port]" (or "[v6]:port"). Port 0 means
// none was given.
func splitSpec(spec string) (userName, host string, port int, err error) {
	spec = strings.TrimPrefix(spec, "ssh://")
	if i := strings.LastIndexByte(spec, '@'); i >= 0 {
		userName, spec = spec[:i], spec[i+1:]
	}
	host = spec
	if strings.HasPrefix(spec, "[") || strings.Count(spec, ":") == 1 {
		h, p, splitErr := net.SplitHostPort(spec)
		if splitErr != nil {
			if strings.HasPrefix(spec, "[") && strings.HasSuffix(spec, "]") {
				return userName, spec[1 : len(spec)-1], 0, nil
			}
			return "", "", 0, fmt.Errorf("bad host %q: %v", spec, splitErr)
		}
		host = h
		if port, err = parsePort(p); err != nil {
			return "", "", 0, err
		}
	}
	if host == "" {
		return "", "", 0, fmt.Errorf("empty host name")
	}
	return userName, host, port, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("bad port %q", s)
	}
	return p, nil
}

// resolver turns host specifications into endpoints.
type resolver struct {
	opts Options
	cfg  *sshConfig
	env  env
}

// resolve works out one hop. target is true for the host itself, false for
// a jump host (Options.User, Port and ProxyJump then do not apply).
func (r *resolver) resolve(spec string, target bool) (endpoint, error) {
	specUser, alias, specPort, err := splitSpec(spec)
	if err != nil {
		return endpoint{}, err
	}
	ep := endpoint{alias: alias}

	// As on ssh's command line, a user given here is set before the file is
	// read: Match user sees it.
	preset := specUser
	if preset == "" && target {
		preset = r.opts.User
	}
	hc, err := r.cfg.lookup(alias, preset, r.env.localUser)
	if err != nil {
		return endpoint{}, err
	}
	bad := func(keyword string, err error) error {
		return fmt.Errorf("ssh config %s: %s: %w", hc.values[keyword].where, hc.values[keyword].rest, err)
	}
	if err := refuse(hc); err != nil {
		return endpoint{}, err
	}

	// ssh lower-cases the name it connects to (and looks up in
	// known_hosts), not the one Host lines matched.
	ep.hostname = strings.ToLower(hc.hostname(alias))

	switch {
	case preset != "":
		ep.user = preset
	default:
		if u, ok := hc.get("user"); ok {
			ep.user = u
		} else {
			ep.user = r.env.localUser
		}
	}
	if ep.user == "" {
		return endpoint{}, fmt.Errorf("no user name for %s: set one in the inventory, in ssh config, or in $USER", alias)
	}

	switch {
	case specPort != 0:
		ep.port = specPort
	case target && r.opts.Port != 0:
		ep.port = r.opts.Port
	default:
		ep.port = 22
		if v, ok := hc.get("port"); ok {
			if ep.port, err = parsePort(v); err != nil {
				return endpoint{}, bad("port", err)
			}
		}
	}

	tokens := map[byte]string{
		'h': ep.hostname, 'n': alias, 'p': strconv.Itoa(ep.port),
		'r': ep.user, 'u': r.env.localUser, 'd': r.env.home,
	}

	for _, p := range r.opts.IdentityFiles {
		ep.identityFiles = append(ep.identityFiles, identityFile{path: r.expandPath(p, tokens), explicit: true})
	}
	for _, s := range hc.multi["identityfile"] {
		if strings.EqualFold(s.first(), "none") {
			continue
		}
		ep.identityFiles = append(ep.identityFiles, identityFile{path: r.expandPath(s.first(), tokens), explicit: true})
	}
	if len(ep.identityFiles) == 0 && r.env.home != "" {
		for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			ep.identityFiles = append(ep.identityFiles, identityFile{path: filepath.Join(r.env.home, ".ssh", name)})
		}
	}
	for _, s := range hc.multi["certificatefile"] {
		ep.certificateFiles = append(ep.certificateFiles, r.expandPath(s.first(), tokens))
	}

	v, _ := hc.get("identitiesonly")
	ep.identitiesOnly = strings.EqualFold(v, "yes")

	ep.identityAgent = r.env.getenv("SSH_AUTH_SOCK")
	if s, ok := hc.values["identityagent"]; ok {
		switch a := s.first(); {
		case strings.EqualFold(a, "none"):
			ep.identityAgent = ""
		case a == "SSH_AUTH_SOCK":
		case strings.HasPrefix(a, "$"):
			ep.identityAgent = r.env.getenv(strings.Trim(a[1:], "{}"))
		default:
			ep.identityAgent = r.expandPath(a, tokens)
		}
	}

	// Files of the user's are checked first and the first of them records
	// new keys; the system-wide ones are read, never written.
	var userFiles, globalFiles []string
	switch {
	case len(r.opts.KnownHostsFiles) > 0:
		for _, p := range r.opts.KnownHostsFiles {
			userFiles = append(userFiles, r.expandPath(p, tokens))
		}
	default:
		if s, ok := hc.values["userknownhostsfile"]; ok {
			for _, p := range s.args {
				if !strings.EqualFold(p, "none") {
					userFiles = append(userFiles, r.expandPath(p, tokens))
				}
			}
		} else if r.env.home != "" {
			userFiles = []string{filepath.Join(r.env.home, ".ssh", "known_hosts"), filepath.Join(r.env.home, ".ssh", "known_hosts2")}
		}
		if s, ok := hc.values["globalknownhostsfile"]; ok {
			for _, p := range s.args {
				if !strings.EqualFold(p, "none") {
					globalFiles = append(globalFiles, r.expandPath(p, tokens))
				}
			}
		} else {
			globalFiles = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
		}
	}
	ep.knownHosts = append(userFiles, globalFiles...)
	if len(userFiles) > 0 {
		ep.recordTo = userFiles[0]
	}

	v, _ = hc.get("stricthostkeychecking")
	switch strings.ToLower(v) {
	case "accept-new", "no", "off":
		// "no" would also accept changed keys in OpenSSH; gpuform never
		// does, so it is read as accept-new.
		ep.acceptNew = true
	}
	if r.opts.AcceptNewHostKeys {
		ep.acceptNew = true
	}
	v, _ = hc.get("hashknownhosts")
	ep.hashKnownHosts = strings.EqualFold(v, "yes")

	ep.connectTimeout = r.opts.ConnectTimeout
	if ep.connectTimeout == 0 {
		v, _ := hc.get("connecttimeout")
		if s, err := seconds(v); err != nil {
			return endpoint{}, bad("connecttimeout", err)
		} else if s > 0 {
			ep.connectTimeout = s
		} else {
			ep.connectTimeout = DefaultConnectTimeout
		}
	}

	ep.keepalive = r.opts.KeepaliveInterval
	if ep.keepalive == 0 {
		v, _ := hc.get("serveraliveinterval")
		s, err := seconds(v)
		switch {
		case err != nil:
			return endpoint{}, bad("serveraliveinterval", err)
		case v == "":
			ep.keepalive = DefaultKeepaliveInterval
		case s == 0:
			ep.keepalive = -1 // "ServerAliveInterval 0" turns them off.
		default:
			ep.keepalive = s
		}
	}
	ep.keepaliveMax = r.opts.KeepaliveCountMax
	if ep.keepaliveMax <= 0 {
		if v, ok := hc.get("serveralivecountmax"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return endpoint{}, bad("serveralivecountmax", fmt.Errorf("bad count %q", v))
			}
			ep.keepaliveMax = n
		} else {
			ep.keepaliveMax = DefaultKeepaliveCountMax
		}
	}

	if target {
		ep.proxyJump = r.opts.ProxyJump
	}
	if len(ep.proxyJump) == 0 {
		if s, ok := hc.values["proxyjump"]; ok {
			ep.proxyJump = splitJumps(s.rest)
		}
	}
	return ep, nil
}

// splitJumps splits a ProxyJump value, "none" being none.
func splitJumps(v string) []string {
	if i := strings.Index(v, "#"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "none") {
		return nil
	}
	var out []string
	for _, hop := range strings.Split(v, ",") {
		if hop = strings.TrimSpace(hop); hop != "" {
			out = append(out, hop)
		}
	}
	return out
}

// refuse reports the first keyword that applies to this host and that
// gpuform cannot honour, with its file and line.
func refuse(hc *hostConfig) error {
	if s, ok := hc.values["proxycommand"]; ok && !strings.EqualFold(strings.TrimSpace(s.rest), "none") {
		return fmt.Errorf("ssh config %s: ProxyCommand is not supported by gpuform (it connects by itself and through ProxyJump); "+
			"use ProxyJump, or the inventory's jump, instead", s.where)
	}
	if s, ok := hc.values["canonicalizehostname"]; ok {
		switch strings.ToLower(s.first()) {
		case "yes", "always":
			return fmt.Errorf("ssh config %s: CanonicalizeHostname %s is not supported by gpuform; "+
				"write the full name in HostName or in the inventory instead", s.where, s.first())
		}
	}
	if s, ok := hc.values["hostkeyalias"]; ok {
		return fmt.Errorf("ssh config %s: HostKeyAlias is not supported by gpuform; "+
			"record the host's key under its own name in known_hosts instead", s.where)
	}
	return nil
}

// chain resolves the jump hosts of target, nearest first. As with ssh -J,
// the first jump host is reached by its own ProxyJump from ssh config (a
// chain of bastions, each configured to go through the previous one); the
// later ones through the hops before them.
func (r *resolver) chain(jumps []string, depth int) ([]endpoint, error) {
	if len(jumps) == 0 {
		return nil, nil
	}
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("jump host %s: ProxyJump chain longer than %d hops (does it loop?)", jumps[0], maxIncludeDepth)
	}
	var out []endpoint
	for i, spec := range jumps {
		hop, err := r.resolve(spec, false)
		if err != nil {
			return nil, fmt.Errorf("jump host %s: %w", spec, err)
		}
		if i == 0 && len(hop.proxyJump) > 0 {
			before, err := r.chain(hop.proxyJump, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, before...)
		}
		hop.proxyJump = nil
		out = append(out, hop)
	}
	return out, nil
}

// seconds parses an ssh_config time value: plain seconds, or OpenSSH's
// suffixed form ("1m30s").
func seconds(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(strings.ToLower(v))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad time %q", v)
	}
	return d, nil
}

// expandPath applies ~ and %-token expansion as ssh does for IdentityFile
// and UserKnownHostsFile.
func (r *resolver) expandPath(p string, tokens map[byte]string) string {
	p = expandTokens(p, tokens)
	if p == "~" {
		return r.env.home
	}
	if strings.HasPrefix(p, "~/") && r.env.home != "" {
		return filepath.Join(r.env.home, p[2:])
	}
	return p
}

// expandTokens replaces %X tokens from tokens and "%%" with "%"; unknown
// tokens are left as written.
func expandTokens(s string, tokens map[byte]string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if s[i] == '%' {
			b.WriteByte('%')
		} else if v, ok := tokens[s[i]]; ok {
			b.WriteString(v)
		} else {
			b.WriteByte('%')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
