//go:build !unix

package conffile

// openNonBlocking is 0 where opening a named pipe by a file path does not
// wait (Windows' pipes live under \\.\pipe\ and are refused by the Stat
// check before the open).
const openNonBlocking = 0

// openNoFollow is 0 where no such open flag exists (Windows): the Lstat
// before and the SameFile check after the open refuse a link or a swap.
const openNoFollow = 0
