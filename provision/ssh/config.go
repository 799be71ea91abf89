package ssh

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// This file reads ssh_config the way OpenSSH's readconf.c does, for the
// keywords gpuform uses: Host and Match (host, originalhost, user,
// localuser, all, canonical, final) decide which lines apply, the first
// value of a keyword wins (IdentityFile and CertificateFile accumulate),
// Include is read in place, and Match host sees the HostName already set,
// with %h substituted. A general library got Match host wrong (it matched
// the alias) and could not say which file and line a value came from.

// maxIncludeDepth is OpenSSH's READCONF_MAX_DEPTH.
const maxIncludeDepth = 16

// configLine is one keyword line of an ssh_config file.
type configLine struct {
	file    string
	num     int
	keyword string   // lower case
	args    []string // unquoted, trailing comment dropped
	rest    string   // the text after the keyword as written (ProxyCommand, ProxyJump)
	include []*configFile
}

// where is FILE:LINE for messages.
func (l *configLine) where() string { return fmt.Sprintf("%s:%d", l.file, l.num) }

// configFile is a parsed ssh_config file with its Includes read.
type configFile struct {
	path  string
	lines []*configLine
}

// sshConfig is the configuration of a run: the user's file.
type sshConfig struct {
	root *configFile
}

// loadSSHConfig parses path and every file it includes. Relative Include
// paths are taken from ~/.ssh, as for ssh's user configuration (-F too).
func loadSSHConfig(path, home string) (*sshConfig, error) {
	f, err := parseConfigFile(path, home, 0)
	if err != nil {
		return nil, err
	}
	return &sshConfig{root: f}, nil
}

func parseConfigFile(path, home string, depth int) (*configFile, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("ssh config %s: Include nested more than %d deep", path, maxIncludeDepth)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &configFile{path: path}
	for i, text := range strings.Split(string(data), "\n") {
		l, err := parseConfigLine(text)
		if err != nil {
			return nil, fmt.Errorf("ssh config %s:%d: %v", path, i+1, err)
		}
		if l == nil {
			continue
		}
		l.file, l.num = path, i+1
		if l.keyword == "include" {
			if err := l.readIncludes(home, depth); err != nil {
				return nil, err
			}
		}
		f.lines = append(f.lines, l)
	}
	return f, nil
}

func (l *configLine) readIncludes(home string, depth int) error {
	for _, arg := range l.args {
		p := arg
		switch {
		case strings.HasPrefix(p, "~/") || p == "~":
			if home == "" {
				return fmt.Errorf("ssh config %s: Include %s: HOME is not set", l.where(), arg)
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		case !filepath.IsAbs(p):
			if home == "" {
				return fmt.Errorf("ssh config %s: Include %s: HOME is not set", l.where(), arg)
			}
			p = filepath.Join(home, ".ssh", p)
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return fmt.Errorf("ssh config %s: Include %s: %v", l.where(), arg, err)
		}
		// No match is no file, as for ssh; glob sorts like glob(3).
		for _, m := range matches {
			inc, err := parseConfigFile(m, home, depth+1)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				var pe *os.PathError
				if errors.As(err, &pe) {
					return fmt.Errorf("ssh config %s: Include %s: %w", l.where(), m, err)
				}
				return err
			}
			l.include = append(l.include, inc)
		}
	}
	return nil
}

// parseConfigLine splits a line into keyword and arguments as OpenSSH's
// strdelim and argv_split do; nil for blank lines and comments.
func parseConfigLine(text string) (*configLine, error) {
	s := strings.TrimRight(text, " \t\r\f")
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] == '#' {
		return nil, nil
	}
	end := strings.IndexAny(s, " \t=")
	if end < 0 {
		return nil, fmt.Errorf("no argument after keyword %q", s)
	}
	keyword := strings.ToLower(s[:end])
	rest := strings.TrimLeft(s[end:], " \t")
	rest = strings.TrimPrefix(rest, "=")
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return nil, fmt.Errorf("no argument after keyword %q", strings.ToLower(keyword))
	}
	args, err := splitArgs(rest)
	if err != nil {
		return nil, err
	}
	return &configLine{keyword: keyword, args: args, rest: rest}, nil
}

// splitArgs is OpenSSH's argv_split with comments ending the line: quotes
// group, backslash escapes quotes, backslash and (unquoted) space.
func splitArgs(s string) ([]string, error) {
	var args []string
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			continue
		}
		if s[i] == '#' {
			break
		}
		var b strings.Builder
		var quote byte
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"' || s[i+1] == '\\' || (quote == 0 && s[i+1] == ' ')):
				i++
				b.WriteByte(s[i])
			case quote == 0 && (c == ' ' || c == '\t'):
				goto done
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote != 0 && c == quote:
				quote = 0
			default:
				b.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, errors.New("invalid quotes")
		}
	done:
		args = append(args, b.String())
	}
	return args, nil
}

// setting is the value a keyword got and the line it came from.
type setting struct {
	args  []string
	rest  string
	where string
}

// first is the setting's first argument.
func (s setting) first() string {
	if len(s.args) == 0 {
		return ""
	}
	return s.args[0]
}

// hostConfig is what the configuration says about one host.
type hostConfig struct {
	values map[string]setting // first value wins
	multi  map[string][]setting
}

// get returns the first argument of keyword (lower case) and whether it
// was set.
func (h *hostConfig) get(keyword string) (string, bool) {
	if h == nil {
		return "", false
	}
	s, ok := h.values[keyword]
	return s.first(), ok
}

// accumulating reports whether a keyword adds a value per line instead of
// keeping the first.
func accumulating(keyword string) bool {
	return keyword == "identityfile" || keyword == "certificatefile"
}

// matchState is what Host and Match lines are evaluated against.
type matchState struct {
	host      string // Host patterns match this: the name as given, or in the final pass the HostName
	original  string // as given, for Match originalhost
	localUser string
	final     bool
	wantFinal bool
}

// lookup evaluates the configuration for alias, as ssh does for `ssh
// alias`: presetUser is a user given on the command line (user@host),
// which Match user sees. A "Match final" line makes a second pass with the
// HostName in place, as in OpenSSH.
func (c *sshConfig) lookup(alias, presetUser, localUser string) (*hostConfig, error) {
	h := &hostConfig{values: map[string]setting{}, multi: map[string][]setting{}}
	if c == nil {
		return h, nil
	}
	if presetUser != "" {
		h.values["user"] = setting{args: []string{presetUser}, where: "command line"}
	}
	st := &matchState{host: alias, original: alias, localUser: localUser}
	active := true
	if err := c.eval(c.root, h, st, &active, false); err != nil {
		return nil, err
	}
	if st.wantFinal {
		hostname := strings.ToLower(h.hostname(alias))
		h.values["hostname"] = setting{args: []string{hostname}, where: h.values["hostname"].where}
		st.host, st.final = hostname, true
		active = true
		if err := c.eval(c.root, h, st, &active, false); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// hostname is HostName with %h replaced by alias, or alias.
func (h *hostConfig) hostname(alias string) string {
	if hn, ok := h.get("hostname"); ok {
		return expandTokens(hn, map[byte]string{'h': alias})
	}
	return alias
}

func (c *sshConfig) eval(f *configFile, h *hostConfig, st *matchState, active *bool, neverMatch bool) error {
	for _, l := range f.lines {
		switch l.keyword {
		case "host":
			*active = !neverMatch && hostLineMatches(st.host, l.args)
		case "match":
			if neverMatch {
				*active = false
				continue
			}
			ok, err := h.matchLine(l, st)
			if err != nil {
				return err
			}
			*active = ok
		case "include":
			outer := *active
			for _, inc := range l.include {
				if err := c.eval(inc, h, st, active, neverMatch || !outer); err != nil {
					return err
				}
				// A Host or Match in an included file ends there.
				*active = outer
			}
		default:
			if !*active {
				continue
			}
			s := setting{args: l.args, rest: l.rest, where: l.where()}
			switch {
			case accumulating(l.keyword):
				h.multi[l.keyword] = append(h.multi[l.keyword], s)
			case l.keyword == "proxyjump" || l.keyword == "proxycommand":
				// They exclude each other: whichever comes first wins.
				_, jump := h.values["proxyjump"]
				_, cmd := h.values["proxycommand"]
				if !jump && !cmd {
					h.values[l.keyword] = s
				}
			default:
				if _, ok := h.values[l.keyword]; !ok {
					h.values[l.keyword] = s
				}
			}
		}
	}
	return nil
}

// hostLineMatches is a Host line: any pattern matches and no negated one
// does. Host patterns are case sensitive, unlike Match host.
func hostLineMatches(host string, patterns []string) bool {
	matched := false
	for _, p := range patterns {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if matchPattern(host, neg) {
				return false
			}
			continue
		}
		if matchPattern(host, p) {
			matched = true
		}
	}
	return matched
}

// matchLine evaluates a Match line as OpenSSH's match_cfg_line does.
func (h *hostConfig) matchLine(l *configLine, st *matchState) (bool, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("ssh config %s: %s", l.where(), fmt.Sprintf(format, a...))
	}
	if len(l.args) == 0 {
		return false, bad("Match without criteria")
	}
	host := st.host
	if !st.final {
		host = h.hostname(st.host)
	}
	user, ok := h.get("user")
	if !ok {
		user = st.localUser
	}
	result := true
	others := 0
	for i := 0; i < len(l.args); i++ {
		attr := l.args[i]
		negate := strings.HasPrefix(attr, "!")
		attr = strings.ToLower(strings.TrimPrefix(attr, "!"))
		switch attr {
		case "all":
			if others > 0 || i+1 < len(l.args) {
				return false, bad("'all' cannot be combined with other Match attributes")
			}
			return result && !negate, nil
		case "canonical", "final":
			// gpuform does not canonicalize host names, so both hold
			// only in the pass that "Match final" asks for.
			if attr == "final" {
				st.wantFinal = true
			}
			if st.final == negate {
				result = false
			}
			continue
		}
		others++
		if i+1 >= len(l.args) {
			return false, bad("Match %s needs an argument", attr)
		}
		i++
		arg := l.args[i]
		var r bool
		switch attr {
		case "host":
			r = matchPatternList(strings.ToLower(host), arg, true) == 1
		case "originalhost":
			r = matchPatternList(strings.ToLower(st.original), arg, true) == 1
		case "user":
			r = matchPatternList(user, arg, false) == 1
		case "localuser":
			r = matchPatternList(st.localUser, arg, false) == 1
		case "exec":
			if !result {
				// ssh skips the command when an earlier criterion failed.
				continue
			}
			return false, bad("Match exec is not supported by gpuform: it would run %q on this machine once per host; "+
				"use Match host or originalhost, or give this host its own Host block", arg)
		default:
			return false, bad("Match %s is not supported by gpuform (it reads host, originalhost, user, localuser, all, canonical, final)", attr)
		}
		if r == negate {
			result = false
		}
	}
	return result, nil
}

// matchPatternList is OpenSSH's match_pattern_list: comma-separated
// patterns, "!" negating; 1 for a match, -1 for a negated match, 0 for
// none. With fold the patterns are lower-cased (the string already is).
func matchPatternList(s, list string, fold bool) int {
	got := 0
	for _, p := range strings.Split(list, ",") {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if fold {
			p = strings.ToLower(p)
		}
		if matchPattern(s, p) {
			if neg {
				return -1
			}
			got = 1
		}
	}
	return got
}

// matchPattern is OpenSSH's match_pattern: '*' any run, '?' one byte.
func matchPattern(s, p string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchPattern(s[i:], p) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		s, p = s[1:], p[1:]
	}
	return s == ""
}
