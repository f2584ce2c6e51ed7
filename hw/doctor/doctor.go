package doctor

// Check is one finding of Run.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // StatusOK, StatusWarn, StatusFail or StatusAbsent
	Found  string `json:"found"`
	Fix    string `json:"fix"` // what to do; empty when nothing is needed
}

// Check statuses. Absent means the hardware or feature is not there, which
// is no error: kvsim simulates what it cannot drive.
const (
	StatusOK     = "ok"
	StatusWarn   = "warn"
	StatusFail   = "fail"
	StatusAbsent = "absent"
)

// Options configures Run.
type Options struct {
	// Dir is the store directory to test for O_DIRECT (default ".").
	Dir string

	root string // tests: prefix for /sys, /proc, /etc, /usr, /opt, /dev
}
