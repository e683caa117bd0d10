//go:build unix

package tests

import (
	"runtime"
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

// peakRSS is the most resident memory the process has held, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there, KiB on Linux and the BSDs
	}
	return int64(ru.Maxrss) << 10
}
