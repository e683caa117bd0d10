//go:build !unix

package tests

import "time"

// processCPU is not measured here: the CPU figures read 0.
func processCPU() time.Duration { return 0 }

// peakRSS is not measured here: the memory figures read 0.
func peakRSS() int64 { return 0 }
