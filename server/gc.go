package server

import (
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// GCPercent is the garbage collector's target the relaybell command runs
// with where GOGC is not set: a heap may grow to three times what is live
// before a collection, not twice (Go's default, 100). A broadcast
// allocates for every push, and at 100 the collector was about a tenth of
// RelayBell's CPU per push (docs/send-path.md, "The garbage collector's
// target"); 200 costs about 10 MiB more at the bench's 30,000 browsers.
const GCPercent = 200

// memoryLimitShare is the part of the container's memory limit the heap is
// held under (GOMEMLIMIT's soft limit) where GOMEMLIMIT is not set: the
// larger target must not push a node over the limit it is killed at.
const memoryLimitShare = 0.9

// cgroupMemoryFiles hold the memory limit of the process's container:
// cgroup v2's, then v1's.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// GCSettings are the collector's settings the relaybell command applies:
// Percent (debug.SetGCPercent) unless GOGC is set, and MemoryLimit
// (debug.SetMemoryLimit) unless GOMEMLIMIT is set or the container has no
// limit; zero is "leave as it is".
type GCSettings struct {
	Percent     int
	MemoryLimit int64
}

// GCDefaults decides GCSettings from the environment (getenv) and the
// container's memory limit (readFile reads cgroupMemoryFiles; an error is
// "no such file"). A GOGC or GOMEMLIMIT an operator set is theirs: the
// runtime has applied it already.
func GCDefaults(getenv func(string) string, readFile func(string) ([]byte, error)) GCSettings {
	var s GCSettings
	if getenv("GOGC") == "" {
		s.Percent = GCPercent
	}
	if getenv("GOMEMLIMIT") != "" {
		return s
	}
	for _, name := range cgroupMemoryFiles {
		b, err := readFile(name)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1's "no limit"): nothing to hold.
		limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || limit <= 0 || limit >= math.MaxInt64/2 {
			return s
		}
		s.MemoryLimit = int64(float64(limit) * memoryLimitShare)
		return s
	}
	return s
}

// Apply sets the collector's settings for the process.
func (s GCSettings) Apply() {
	if s.Percent > 0 {
		debug.SetGCPercent(s.Percent)
	}
	if s.MemoryLimit > 0 {
		debug.SetMemoryLimit(s.MemoryLimit)
	}
}
