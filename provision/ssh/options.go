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

	"github.com/kevinburke/ssh_config"
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
func loadConfig(path string, e env) (*ssh_config.Config, error) {
	if path == NoConfig {
		return nil, nil
	}
	if path == "" {
		if e.home == "" {
			return nil, nil
		}
		path = filepath.Join(e.home, ".ssh", "config")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ssh config: %w", err)
	}
	defer f.Close()
	cfg, err := ssh_config.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("ssh config %s: %w", path, err)
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
	cfg  *ssh_config.Config
	env  env
}

// get returns the first ssh_config value for alias and key, unquoted.
func (r *resolver) get(alias, key string) string {
	if r.cfg == nil {
		return ""
	}
	v, err := r.cfg.Get(alias, key)
	if err != nil {
		return ""
	}
	return unquote(v)
}

func (r *resolver) getAll(alias, key string) []string {
	if r.cfg == nil {
		return nil
	}
	vs, err := r.cfg.GetAll(alias, key)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, unquote(v))
	}
	return out
}

func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

// resolve works out one hop. target is true for the host itself, false for
// a jump host (Options.User, Port and ProxyJump then do not apply).
func (r *resolver) resolve(spec string, target bool) (endpoint, error) {
	specUser, alias, specPort, err := splitSpec(spec)
	if err != nil {
		return endpoint{}, err
	}
	ep := endpoint{alias: alias}

	ep.hostname = alias
	if hn := r.get(alias, "HostName"); hn != "" {
		ep.hostname = expandTokens(hn, map[byte]string{'h': alias})
	}

	switch {
	case specUser != "":
		ep.user = specUser
	case target && r.opts.User != "":
		ep.user = r.opts.User
	case r.get(alias, "User") != "":
		ep.user = r.get(alias, "User")
	default:
		ep.user = r.env.localUser
	}
	if ep.user == "" {
		return endpoint{}, fmt.Errorf("no user name for %s: set one in the inventory, in ssh config, or in $USER", alias)
	}

	switch {
	case specPort != 0:
		ep.port = specPort
	case target && r.opts.Port != 0:
		ep.port = r.opts.Port
	case r.get(alias, "Port") != "":
		if ep.port, err = parsePort(r.get(alias, "Port")); err != nil {
			return endpoint{}, fmt.Errorf("ssh config Port for %s: %w", alias, err)
		}
	default:
		ep.port = 22
	}

	tokens := map[byte]string{
		'h': ep.hostname, 'n': alias, 'p': strconv.Itoa(ep.port),
		'r': ep.user, 'u': r.env.localUser, 'd': r.env.home,
	}

	for _, p := range r.opts.IdentityFiles {
		ep.identityFiles = append(ep.identityFiles, identityFile{path: r.expandPath(p, tokens), explicit: true})
	}
	for _, p := range r.getAll(alias, "IdentityFile") {
		ep.identityFiles = append(ep.identityFiles, identityFile{path: r.expandPath(p, tokens), explicit: true})
	}
	if len(ep.identityFiles) == 0 && r.env.home != "" {
		for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			ep.identityFiles = append(ep.identityFiles, identityFile{path: filepath.Join(r.env.home, ".ssh", name)})
		}
	}

	ep.identitiesOnly = strings.EqualFold(r.get(alias, "IdentitiesOnly"), "yes")

	switch {
	case len(r.opts.KnownHostsFiles) > 0:
		for _, p := range r.opts.KnownHostsFiles {
			ep.knownHosts = append(ep.knownHosts, r.expandPath(p, tokens))
		}
	case r.get(alias, "UserKnownHostsFile") != "":
		for _, p := range strings.Fields(r.get(alias, "UserKnownHostsFile")) {
			ep.knownHosts = append(ep.knownHosts, r.expandPath(p, tokens))
		}
	default:
		if r.env.home != "" {
			ep.knownHosts = append(ep.knownHosts, filepath.Join(r.env.home, ".ssh", "known_hosts"))
		}
		// The system-wide file is read, never written (OpenSSH's
		// GlobalKnownHostsFile).
		ep.knownHosts = append(ep.knownHosts, "/etc/ssh/ssh_known_hosts")
	}
	if len(ep.knownHosts) > 0 && ep.knownHosts[0] != "/etc/ssh/ssh_known_hosts" {
		ep.recordTo = ep.knownHosts[0]
	}

	switch strings.ToLower(r.get(alias, "StrictHostKeyChecking")) {
	case "accept-new", "no", "off":
		// "no" would also accept changed keys in OpenSSH; gpuform never
		// does, so it is read as accept-new.
		ep.acceptNew = true
	}
	if r.opts.AcceptNewHostKeys {
		ep.acceptNew = true
	}
	ep.hashKnownHosts = strings.EqualFold(r.get(alias, "HashKnownHosts"), "yes")

	ep.connectTimeout = r.opts.ConnectTimeout
	if ep.connectTimeout == 0 {
		if s, err := seconds(r.get(alias, "ConnectTimeout")); err != nil {
			return endpoint{}, fmt.Errorf("ssh config ConnectTimeout for %s: %w", alias, err)
		} else if s > 0 {
			ep.connectTimeout = s
		} else {
			ep.connectTimeout = DefaultConnectTimeout
		}
	}

	ep.keepalive = r.opts.KeepaliveInterval
	if ep.keepalive == 0 {
		v := r.get(alias, "ServerAliveInterval")
		s, err := seconds(v)
		switch {
		case err != nil:
			return endpoint{}, fmt.Errorf("ssh config ServerAliveInterval for %s: %w", alias, err)
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
		if v := r.get(alias, "ServerAliveCountMax"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return endpoint{}, fmt.Errorf("ssh config ServerAliveCountMax for %s: bad count %q", alias, v)
			}
			ep.keepaliveMax = n
		} else {
			ep.keepaliveMax = DefaultKeepaliveCountMax
		}
	}

	if target {
		ep.proxyJump = r.opts.ProxyJump
		if len(ep.proxyJump) == 0 {
			if v := r.get(alias, "ProxyJump"); v != "" && !strings.EqualFold(v, "none") {
				for _, hop := range strings.Split(v, ",") {
					if hop = strings.TrimSpace(hop); hop != "" {
						ep.proxyJump = append(ep.proxyJump, hop)
					}
				}
			}
		}
	}
	return ep, nil
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
