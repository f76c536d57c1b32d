package server

import (
	"math"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
)

// GCPercent is the garbage collector's target the relaybell command runs
// with where GOGC is not set: a heap may grow to three times what is live
// before a collection, not twice (Go's default, 100). A broadcast
// allocates for every push; at 200 an embedded broadcast took about 6%
// less CPU a push (6 to 37 µs in eight pairs of runs) for 5 to 12 MiB
// more (docs/send-path.md, "The garbage collector's target").
const GCPercent = 200

// memoryLimitShare is the part of the container's memory limit the heap is
// held under (GOMEMLIMIT's soft limit) where GOMEMLIMIT is not set: the
// larger target must not push a node over the limit it is killed at.
const memoryLimitShare = 0.9

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// GCSettings are the collector's settings the relaybell command applies:
// Percent (debug.SetGCPercent) unless GOGC is set, and MemoryLimit
// (debug.SetMemoryLimit) unless GOMEMLIMIT is set or the container has no
// limit; zero is "leave as it is".
type GCSettings struct {
	Percent     int
	MemoryLimit int64
}

// GCDefaults decides GCSettings from the environment (getenv) and the
// process's memory limit (memoryLimit, through readFile; an error is "no
// such file"). A GOGC or GOMEMLIMIT an operator set is theirs: the runtime
// has applied it already.
func GCDefaults(getenv func(string) string, readFile func(string) ([]byte, error)) GCSettings {
	var s GCSettings
	if getenv("GOGC") == "" {
		s.Percent = GCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		if limit, ok := memoryLimit(readFile); ok {
			s.MemoryLimit = int64(float64(limit) * memoryLimitShare)
		}
	}
	return s
}

// memoryLimit is the lowest memory limit of the process's cgroup and its
// ancestors (a pod's limit may be set on its parent), cgroup v2's
// memory.max or v1's memory.limit_in_bytes, found through
// /proc/self/cgroup; and the limit at the mount's root, which is the
// container's own where the container has a cgroup namespace of its own.
// "max" and v1's "no limit" (a number near 2^63) are no limit.
func memoryLimit(readFile func(string) ([]byte, error)) (int64, bool) {
	var files []string
	if b, err := readFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			// hierarchy-ID:controller-list:path
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
				continue
			}
			dir, file := "", ""
			switch {
			case parts[0] == "0" && parts[1] == "":
				dir, file = cgroupRoot, "memory.max"
			case slices.Contains(strings.Split(parts[1], ","), "memory"):
				dir, file = cgroupRoot+"/memory", "memory.limit_in_bytes"
			default:
				continue
			}
			for p := path.Clean(parts[2]); ; p = path.Dir(p) {
				files = append(files, path.Join(dir, p, file))
				if p == "/" {
					break
				}
			}
		}
	}
	files = append(files, cgroupRoot+"/memory.max", cgroupRoot+"/memory/memory.limit_in_bytes")
	var lowest int64
	for _, name := range files {
		b, err := readFile(name)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || limit <= 0 || limit >= math.MaxInt64/2 {
			continue
		}
		if lowest == 0 || limit < lowest {
			lowest = limit
		}
	}
	return lowest, lowest > 0
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

// gcInUse is the collector's target and soft memory limit in force (0:
// none), for the start's log line.
func gcInUse() (percent, memoryLimit int64) {
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(samples)
	percent = int64(samples[0].Value.Uint64())
	if l := samples[1].Value.Uint64(); l < math.MaxInt64 {
		memoryLimit = int64(l)
	}
	return percent, memoryLimit
}
