package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// imexChannelReads declares what imex_channel reads back on a node: its
// tmpfiles.d file and /proc/devices, for the channel device's major.
func imexChannelReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{IMEXChannelFile}, ConfigFiles: []string{procDevices}, ManagedDirs: []string{pendingDir}}
}

// imexChannel writes the systemd-tmpfiles lines that create
// /dev/nvidia-caps-imex-channels/channel0 (mode 0666, as the IMEX guide's
// example lists it) with the major number the running driver registered
// in /proc/devices ("the major number can differ between nodes"). No
// major before the driver runs: the channel waits for a plan after it.
// Writing the file also creates the device at once where it is missing
// (the guide's mknod with the same major), so no reboot is needed.
func buildIMEXChannel(in *buildInput) ([]Resource, []string, error) {
	if !in.imexWanted() {
		return nil, nil, nil
	}
	major := ""
	if cf, ok := in.f.ConfigFile(procDevices); ok {
		for _, line := range strings.Split(string(cf.Data), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[1] == imexChannelsName {
				major = f[0]
			}
		}
	}
	if major == "" || strings.Trim(major, "0123456789") != "" {
		return nil, []string{"imex: " + procDevices + " has no " + imexChannelsName + " device yet (the driver is not running or predates IMEX channels); the channel device is planned once it has"}, nil
	}
	content := header(in.n) +
		"d /dev/" + imexChannelsName + " 0755 root root -\n" +
		fmt.Sprintf("c /dev/%s/channel0 0666 root root - %s:0\n", imexChannelsName, major)
	return []Resource{&fileResource{
		base:    base{name: IMEXChannel, deps: []string{IMEXPackage}},
		path:    IMEXChannelFile,
		content: content,
		current: managedFile(IMEXChannelFile),
		then:    createIMEXChannel(major),
		attrs: func(_ *facts.Node, cur string, exists bool) Values {
			return Values{"device": StringVal("/dev/" + imexChannelsName + "/channel0"), "created_at_boot": BoolVal(exists && cur == content)}
		},
		desired: Values{"device": StringVal("/dev/" + imexChannelsName + "/channel0"), "created_at_boot": BoolVal(true)},
	}}, nil, nil
}
