//go:build unix

package tests

import (
	"syscall"
	"time"
)

// processCPU is the CPU time every thread of the process has used, the
// garbage collector's workers included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
