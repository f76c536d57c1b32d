package bench

import (
	"crypto/sha256"
	"math"
	"os"
	"testing"
)

// TestCPUSecondsResolvesLessThanATick: a process's processor time is read
// in nanoseconds, not in the 10 ms clock ticks of /proc/<pid>/stat, so a
// small run's fake push service is not read as having used none (the
// peers' test sends 300 pushes, about 10 ms of the fake's time). The two
// readings agree within a tick and the scheduler's lag.
func TestCPUSecondsResolvesLessThanATick(t *testing.T) {
	pid := os.Getpid()
	sum := sha256.Sum256(nil)
	for range 20000 { // some tens of milliseconds of work
		sum = sha256.Sum256(sum[:])
	}
	fine, ok := threadSeconds(pid)
	if !ok {
		t.Skip("this kernel keeps no schedstat for the threads")
	}
	coarse := statSeconds(pid)
	if ticks := fine * clockTicks; ticks == math.Trunc(ticks) {
		t.Errorf("the threads' time %v s is a whole number of ticks", fine)
	}
	if got := cpuSeconds(pid); got < fine {
		t.Errorf("cpuSeconds %v s, below the threads' %v s read before it", got, fine)
	}
	if d := math.Abs(fine - coarse); d > 3.0/clockTicks {
		t.Errorf("the threads' time %v s and the stat's %v s differ by %v s", fine, coarse, d)
	}
}
