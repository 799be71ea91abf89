package resource

import "testing"

// TestInstallText: an install step's description reads as one clause of
// a sentence (issue 34: it read "install nvidia-open=… with
// nvidia-driver-pinning-580 if the repository has it remove
// cuda-drivers-535").
func TestInstallText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		specs   []string
		pinning string
		removed []string
		want    string
	}{
		{[]string{"nvidia-open=580.159.03-0ubuntu1"}, "nvidia-driver-pinning-580", []string{"cuda-drivers-535"},
			"install nvidia-open=580.159.03-0ubuntu1 (and nvidia-driver-pinning-580 where the repository offers it), removing cuda-drivers-535"},
		{[]string{"libnccl2=2.25.1-1+cuda12.8", "libnccl-dev=2.25.1-1+cuda12.8"}, "", nil,
			"install libnccl2=2.25.1-1+cuda12.8 and libnccl-dev=2.25.1-1+cuda12.8"},
		{[]string{"a=1", "b=2", "c=3"}, "", []string{"x", "y"}, "install a=1, b=2 and c=3, removing x and y"},
	} {
		if got := installText(tc.specs, tc.pinning, tc.removed); got != tc.want {
			t.Errorf("installText(%q, %q, %q)\n got %q\nwant %q", tc.specs, tc.pinning, tc.removed, got, tc.want)
		}
	}
	if got := listText(nil); got != "" {
		t.Errorf("listText(nil) = %q", got)
	}
}
