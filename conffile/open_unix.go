//go:build unix

package conffile

import "syscall"

// openNonBlocking keeps an open from waiting for a FIFO's writer;
// openNoFollow refuses a link at the path.
const (
	openNonBlocking = syscall.O_NONBLOCK
	openNoFollow    = syscall.O_NOFOLLOW
)
