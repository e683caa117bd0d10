//go:build !unix

package conffile

// openNonBlocking is 0 where opening a named pipe by a file path does not
// wait (Windows' pipes live under \\.\pipe\ and are refused by the Stat
// check before the open).
const openNonBlocking = 0
