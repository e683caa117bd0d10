//go:build unix

package conffile

import "syscall"

// openNonBlocking keeps an open from waiting for a FIFO's writer.
const openNonBlocking = syscall.O_NONBLOCK
