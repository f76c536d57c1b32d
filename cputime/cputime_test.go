package cputime

import (
	"testing"
	"time"
)

// Work on the processor shows in Process and in Split's user time:
// computing (not reading the time, a system call whose time is the
// kernel's), both move on, within ten seconds however loaded the machine.
// The kernel charges whole ticks to user or system time by where each
// finds the process, so a loop of mostly system calls could pass 10 ms
// with no user time at all.
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	user0, _ := Split()
	deadline := time.Now().Add(10 * time.Second)
	x := uint64(1)
	for {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if user, _ := Split(); user-user0 >= 10*time.Millisecond && Process()-start >= 10*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			user, _ := Split()
			t.Fatalf("10 s computing used %v of the processor, %v of it user time (%d)", Process()-start, user-user0, x)
		}
	}
}
