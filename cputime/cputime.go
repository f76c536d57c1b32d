// Package cputime reads the processor time this process has used, which
// the benchmarks report per unit of work: CPU, not wall time, is what a
// busy machine's cores are shared by.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system time the process has used so far
// (getrusage); 0 where it cannot be read.
func Process() time.Duration {
	user, sys := Split()
	return user + sys
}

// Split is Process's user and system time, apart.
func Split() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
