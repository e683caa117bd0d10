// The contract of package wineventlog with wevtapi.dll, in a file built on
// every OS so that a test on Linux can hold it to mingw-w64's winevt.h and
// winerror.h (the calls themselves can only run on Windows).

package wineventlog

import "syscall"

// wevtapi flags and the Win32 errors the loop distinguishes.
const (
	subscribeToFutureEvents      = 1
	subscribeStartAtOldestRecord = 2
	subscribeStartAfterBookmark  = 3
	subscribeStrict              = 0x10000
	renderEventXML               = 1
	renderBookmark               = 2
	queryChannelPath             = 0x1
	queryReverseDirection        = 0x200
	formatEvent                  = 1
	formatLevel                  = 2
	formatTask                   = 3
	formatOpcode                 = 4
	formatKeyword                = 5
	openChannelPath              = 1
	logNumberOfLogRecords        = 5 // EvtLogNumberOfLogRecords
	logOldestRecordNumber        = 6 // EvtLogOldestRecordNumber

	errInsufficientBuffer syscall.Errno = 122
	errNoMoreItems        syscall.Errno = 259
	errNotFound           syscall.Errno = 1168
	rpcInvalidBound       syscall.Errno = 1734
	errInvalidOperation   syscall.Errno = 4317
	errUnresolvedInsert   syscall.Errno = 15029
)

// evtVariant is EVT_VARIANT: a 16-byte union of the value, then Count and
// Type (DWORDs).
type evtVariant struct {
	Value uint64
	Count uint32
	Type  uint32
}
