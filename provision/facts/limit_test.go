package facts

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestParseRefusesHugeOutput checks that output past MaxOutput is refused
// before it is split into records.
func TestParseRefusesHugeOutput(t *testing.T) {
	out := bytes.Repeat([]byte("x"), MaxOutput+1)
	_, err := Parse(out)
	if !errors.Is(err, ErrGarbled) || !strings.Contains(err.Error(), "exceeds the limit of 64 MiB") {
		t.Errorf("Parse: %v", err)
	}
}
