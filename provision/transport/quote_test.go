package transport

import (
	"os/exec"
	"testing"
)

func TestQuoteRoundTripsThroughShell(t *testing.T) {
	cases := map[string]string{
		"plain":        "550.127.08",
		"empty":        "",
		"injection":    "550.1; rm -rf /",
		"quote":        "it's",
		"subshell":     "$(touch /tmp/pwned)",
		"backtick":     "`id`",
		"newline":      "a\nb",
		"glob":         "*",
		"double":       `"x"`,
		"leading-dash": "-rf",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("/bin/sh", "-c", "printf %s "+Quote(in)).Output()
			if err != nil {
				t.Fatalf("sh: %v", err)
			}
			if string(out) != in {
				t.Errorf("Quote(%q) came back from sh as %q", in, out)
			}
		})
	}
}
