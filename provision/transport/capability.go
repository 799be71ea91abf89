package transport

import "errors"

// ErrNoNVMLAgent, wrapped in an NVMLMocker's error, says the node has no
// NVML the agent could read (a simulated node made to lack the agent):
// verify then reads it through nvidia-smi, as it does a real node where
// the agent cannot run.
var ErrNoNVMLAgent = errors.New("the NVML agent cannot run on this node")

// NVMLMocker is a capability a transport may offer besides running
// commands: its node has no NVML of its own, and NVML is answered by a
// go-nvml mock system instead (a simulated node; this machine under
// verify --local -mock-nvml). verify asks for it with a type assertion, so
// it never needs to know which transport it holds.
type NVMLMocker interface {
	// NVMLMock describes the mock, or says why the node has none.
	NVMLMock() (NVMLMock, error)
}

// NVMLMock is NVML answered by a mock system.
type NVMLMock struct {
	// System names the mock system (one of nvmlfacts.MockNames).
	System string
	// FollowsDriver says the mock answers only while the node's facts
	// show a loaded driver, and reports that driver's version: a simulated
	// node, whose driver apply installs and removes. Otherwise the mock
	// answers as it is.
	FollowsDriver bool
	// Root is a simulated node's root directory: its GPU processes are
	// replayed from there (nvmlfacts.SimProcessesFile and the root's
	// /proc); "" for a mock on a real machine.
	Root string
	// Faults are planted in the mock, written as the NVML agent's --fault
	// takes them (KIND:GPU, xid:GPU:XID, or KIND@BUSID naming the GPU by
	// PCI address, as simulated profiles write them): a simulated node's hardware
	// faults, or a test's.
	Faults []string
}

// WithNVMLMock returns t offering NVMLMocker with m.
func WithNVMLMock(t Transport, m NVMLMock) Transport {
	return mocked{Transport: t, mock: m}
}

type mocked struct {
	Transport
	mock NVMLMock
}

func (m mocked) NVMLMock() (NVMLMock, error) { return m.mock, nil }
