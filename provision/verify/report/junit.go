package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/gpuform/gpuform/provision/verify"
)

// The JUnit elements follow the widely used Jenkins/Ant schema
// (testdata/junit-10.xsd); tests validate the output against it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes d as JUnit XML: one testsuite per host (named after the
// host) and one testcase per check (classname = host, name = check id), so
// "gpu007 › nvml.pcie_link[gpu3]" shows up as a failed test in CI.
func WriteJUnit(w io.Writer, d *Document) error {
	doc := junitSuites{Name: "gpuform verify", Time: seconds(0)}
	var total float64
	for _, h := range d.Hosts {
		s := junitSuite{Name: h.Host, Hostname: h.Host, Time: seconds(h.Duration.Seconds())}
		total += h.Duration.Seconds()
		if h.Source != "" || d.Tier != "" {
			s.Properties = &junitProps{}
			if d.Tier != "" {
				s.Properties.Props = append(s.Properties.Props, junitProp{Name: "tier", Value: string(d.Tier)})
			}
			if h.Source != "" {
				s.Properties.Props = append(s.Properties.Props, junitProp{Name: "nvml_source", Value: h.Source})
			}
		}
		for _, c := range h.Checks {
			tc := junitTestCase{Name: c.ID, Classname: h.Host, Time: seconds(0)}
			body := detail(c)
			switch c.Status {
			case verify.StatusFail:
				tc.Failure = &junitProblem{Message: firstNonEmpty(c.Message, "check failed"), Type: "fail", Body: body}
				s.Failures++
			case verify.StatusPass:
				tc.SystemOut = body
			case verify.StatusSkip:
				tc.Skipped = &junitProblem{Message: c.Message}
				s.Skipped++
			case verify.StatusNotRun:
				// Not run where the tier needed it is an error of the
				// suite: the host was not checked. Left to a deeper
				// tier, it is skipped, its message saying so.
				msg := firstNonEmpty(c.Message, "the check did not run on this host")
				if !strings.HasPrefix(msg, "not run") {
					msg = "not run: " + msg
				}
				if c.Blocks() {
					tc.Error = &junitProblem{Message: msg, Type: "not run", Body: body}
					s.Errors++
				} else {
					tc.Skipped = &junitProblem{Message: msg}
					s.Skipped++
				}
			default:
				// An error, or a status this gpuform does not know.
				tc.Error = &junitProblem{Message: firstNonEmpty(c.Message, "check could not be judged"), Type: firstNonEmpty(string(c.Status), "error"), Body: body}
				s.Errors++
			}
			s.Cases = append(s.Cases, tc)
		}
		s.Tests = len(s.Cases)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func detail(c verify.CheckResult) string {
	var parts []string
	if c.Observed != "" {
		parts = append(parts, "observed: "+c.Observed)
	}
	if c.Expected != "" {
		parts = append(parts, "expected: "+c.Expected)
	}
	if r := c.Remedy; r != nil {
		parts = append(parts, "what it means: "+r.Meaning+" ["+r.Cause+"]", "what to do: "+r.Do+" ["+string(r.Action)+"]")
	}
	return strings.Join(parts, "\n")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }
