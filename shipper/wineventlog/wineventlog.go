//go:build windows

package wineventlog

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/winobs/winobs/shipper/eventxml"
	"github.com/winobs/winobs/shipper/subscribe"
)

var (
	wevtapi                      = windows.NewLazySystemDLL("wevtapi.dll")
	procEvtSubscribe             = wevtapi.NewProc("EvtSubscribe")
	procEvtQuery                 = wevtapi.NewProc("EvtQuery")
	procEvtNext                  = wevtapi.NewProc("EvtNext")
	procEvtRender                = wevtapi.NewProc("EvtRender")
	procEvtClose                 = wevtapi.NewProc("EvtClose")
	procEvtCreateBookmark        = wevtapi.NewProc("EvtCreateBookmark")
	procEvtUpdateBookmark        = wevtapi.NewProc("EvtUpdateBookmark")
	procEvtOpenPublisherMetadata = wevtapi.NewProc("EvtOpenPublisherMetadata")
	procEvtFormatMessage         = wevtapi.NewProc("EvtFormatMessage")
	procEvtOpenLog               = wevtapi.NewProc("EvtOpenLog")
	procEvtGetLogInfo            = wevtapi.NewProc("EvtGetLogInfo")
)

// publisherCacheCapacity bounds the cached publisher metadata handles.
const publisherCacheCapacity = 256

type handle uintptr

func evtClose(h handle) {
	if h != 0 {
		procEvtClose.Call(uintptr(h))
	}
}

// call runs a wevtapi function that returns a BOOL or handle (0 on failure).
func call(p *windows.LazyProc, args ...uintptr) (uintptr, error) {
	r, _, err := p.Call(args...)
	if r == 0 {
		if errno, ok := err.(syscall.Errno); ok && errno != 0 {
			return 0, errno
		}
		return 0, fmt.Errorf("%s failed", p.Name)
	}
	return r, nil
}

func utf16Ptr(s string) *uint16 {
	if s == "" {
		return nil
	}
	p, _ := windows.UTF16PtrFromString(s)
	return p
}

// API is the wevtapi implementation of subscribe.API.
type API struct {
	locale uint32
	mu     sync.Mutex
	pubs   map[string]handle // publisher metadata by provider; 0 when unavailable
}

// New returns an API that formats texts in locale (an LCID, 1033 = en-US).
func New(locale uint32) *API { return &API{locale: locale, pubs: map[string]handle{}} }

// Subscribe implements subscribe.API.
func (a *API) Subscribe(channel, query, bookmark string, start subscribe.Start) (subscribe.Subscription, error) {
	signal, err := windows.CreateEvent(nil, 1, 1, nil) // manual reset, initially set
	if err != nil {
		return nil, err
	}
	var bm handle
	flags := uintptr(subscribeToFutureEvents)
	switch start {
	case subscribe.AfterBookmark:
		h, err := call(procEvtCreateBookmark, uintptr(unsafe.Pointer(utf16Ptr(bookmark))))
		if err != nil {
			windows.CloseHandle(signal)
			return nil, fmt.Errorf("bookmark: %w", err)
		}
		bm, flags = handle(h), subscribeStartAfterBookmark|subscribeStrict
	case subscribe.Oldest:
		flags = subscribeStartAtOldestRecord
	}
	h, err := call(procEvtSubscribe, 0, uintptr(signal), uintptr(unsafe.Pointer(utf16Ptr(channel))),
		uintptr(unsafe.Pointer(utf16Ptr(query))), uintptr(bm), 0, 0, flags)
	if err != nil {
		evtClose(bm)
		windows.CloseHandle(signal)
		if errors.Is(err, errNotFound) {
			return nil, subscribe.ErrBookmarkNotFound
		}
		return nil, fmt.Errorf("EvtSubscribe %s: %w", channel, err)
	}
	if bm == 0 {
		b, err := call(procEvtCreateBookmark, 0)
		if err != nil {
			evtClose(handle(h))
			windows.CloseHandle(signal)
			return nil, err
		}
		bm = handle(b)
	}
	return &subscription{api: a, h: handle(h), signal: signal, bookmark: bm}, nil
}

// Newest implements subscribe.API: a bookmark at the newest matching record.
func (a *API) Newest(channel, query string) (string, bool, error) {
	q, err := call(procEvtQuery, 0, uintptr(unsafe.Pointer(utf16Ptr(channel))), uintptr(unsafe.Pointer(utf16Ptr(query))),
		queryChannelPath|queryReverseDirection)
	if err != nil {
		return "", false, fmt.Errorf("EvtQuery %s: %w", channel, err)
	}
	defer evtClose(handle(q))
	var ev handle
	var got uint32
	if _, err := call(procEvtNext, q, 1, uintptr(unsafe.Pointer(&ev)), 0, 0, uintptr(unsafe.Pointer(&got))); err != nil {
		if errors.Is(err, errNoMoreItems) {
			return "", false, nil
		}
		return "", false, err
	}
	defer evtClose(ev)
	bm, err := call(procEvtCreateBookmark, 0)
	if err != nil {
		return "", false, err
	}
	defer evtClose(handle(bm))
	if _, err := call(procEvtUpdateBookmark, bm, uintptr(ev)); err != nil {
		return "", false, err
	}
	xml, err := render(handle(bm), renderBookmark)
	return string(xml), err == nil, err
}

// NewestRecord implements subscribe.Newest: the oldest record number plus
// the number of records, less one.
func (a *API) NewestRecord(channel string) (uint64, error) {
	h, err := call(procEvtOpenLog, 0, uintptr(unsafe.Pointer(utf16Ptr(channel))), openChannelPath)
	if err != nil {
		return 0, fmt.Errorf("EvtOpenLog %s: %w", channel, err)
	}
	defer evtClose(handle(h))
	oldest, err := logInfoUint64(handle(h), logOldestRecordNumber)
	if err != nil {
		return 0, err
	}
	count, err := logInfoUint64(handle(h), logNumberOfLogRecords)
	if err != nil || count == 0 {
		return 0, err
	}
	return oldest + count - 1, nil
}

// logInfoUint64 reads an EvtVarTypeUInt64 property of an open log.
func logInfoUint64(h handle, prop uintptr) (uint64, error) {
	var v evtVariant
	var used uint32
	if _, err := call(procEvtGetLogInfo, uintptr(h), prop, unsafe.Sizeof(v), uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&used))); err != nil {
		return 0, fmt.Errorf("EvtGetLogInfo: %w", err)
	}
	return v.Value, nil
}

type subscription struct {
	api      *API
	h        handle
	signal   windows.Handle
	bookmark handle
}

func (s *subscription) Wait(timeout time.Duration) error {
	ev, err := windows.WaitForSingleObject(s.signal, uint32(timeout.Milliseconds()))
	if err != nil {
		return err
	}
	if ev == windows.WAIT_OBJECT_0 {
		return windows.ResetEvent(s.signal)
	}
	return nil
}

func (s *subscription) Next(n int) ([]subscribe.Event, error) {
	handles := make([]handle, n)
	var got uint32
	if _, err := call(procEvtNext, uintptr(s.h), uintptr(n), uintptr(unsafe.Pointer(&handles[0])), 0, 0, uintptr(unsafe.Pointer(&got))); err != nil {
		switch {
		case errors.Is(err, errNoMoreItems), errors.Is(err, errInvalidOperation) && got == 0:
			return nil, subscribe.ErrNoMoreItems
		case errors.Is(err, rpcInvalidBound):
			return nil, subscribe.ErrInvalidBound
		}
		return nil, fmt.Errorf("EvtNext: %w", err)
	}
	out := make([]subscribe.Event, 0, got)
	for _, h := range handles[:got] {
		out = append(out, s.event(h))
		evtClose(h)
	}
	return out, nil
}

// event renders one event and moves the bookmark past it, even when the
// event cannot be rendered (the caller counts that).
func (s *subscription) event(h handle) subscribe.Event {
	var e subscribe.Event
	e.XML, e.RenderErr = render(h, renderEventXML)
	if e.RenderErr == nil && !bytes.Contains(e.XML, []byte("<RenderingInfo")) {
		e.Texts = s.api.texts(h, providerName(e.XML))
	}
	if _, err := call(procEvtUpdateBookmark, uintptr(s.bookmark), uintptr(h)); err == nil {
		if bm, err := render(s.bookmark, renderBookmark); err == nil {
			e.Bookmark = string(bm)
		}
	}
	return e
}

func (s *subscription) Close() error {
	evtClose(s.h)
	evtClose(s.bookmark)
	return windows.CloseHandle(s.signal)
}

// render calls EvtRender twice: once to learn the size (in bytes, NUL
// included), once into a buffer of that size. Large events are never dropped.
func render(h handle, flag uintptr) ([]byte, error) {
	var used, props uint32
	_, err := call(procEvtRender, 0, uintptr(h), flag, 0, 0, uintptr(unsafe.Pointer(&used)), uintptr(unsafe.Pointer(&props)))
	if err != nil && !errors.Is(err, errInsufficientBuffer) {
		return nil, fmt.Errorf("EvtRender: %w", err)
	}
	buf := make([]uint16, used/2+1)
	if _, err := call(procEvtRender, 0, uintptr(h), flag, uintptr(len(buf)*2), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(&used)), uintptr(unsafe.Pointer(&props))); err != nil {
		return nil, fmt.Errorf("EvtRender: %w", err)
	}
	return []byte(windows.UTF16ToString(buf)), nil
}

func providerName(xml []byte) string {
	const key = "Provider Name='"
	i := bytes.Index(xml, []byte(key))
	if i < 0 {
		return ""
	}
	rest := xml[i+len(key):]
	j := bytes.IndexByte(rest, '\'')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// texts formats the event's message, level, task, opcode and keywords with
// the provider's metadata; nil when the provider has none on this node.
func (a *API) texts(ev handle, provider string) *eventxml.Texts {
	pub := a.publisher(provider)
	if pub == 0 {
		return nil
	}
	t := &eventxml.Texts{}
	t.Message, _ = formatMessage(pub, ev, formatEvent)
	t.Level, _ = formatMessage(pub, ev, formatLevel)
	t.Task, _ = formatMessage(pub, ev, formatTask)
	t.Opcode, _ = formatMessage(pub, ev, formatOpcode)
	if kw, err := formatMessage(pub, ev, formatKeyword); err == nil {
		for _, k := range strings.Split(kw, "\x00") {
			if k != "" {
				t.Keywords = append(t.Keywords, k)
			}
		}
	}
	return t
}

// publisher returns cached publisher metadata, opening it on first use and
// closing an arbitrary entry when the cache is full.
func (a *API) publisher(provider string) handle {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.pubs[provider]; ok {
		return h
	}
	if len(a.pubs) >= publisherCacheCapacity {
		for k, h := range a.pubs {
			evtClose(h)
			delete(a.pubs, k)
			break
		}
	}
	h, err := call(procEvtOpenPublisherMetadata, 0, uintptr(unsafe.Pointer(utf16Ptr(provider))), 0, uintptr(a.locale), 0)
	if err != nil {
		h = 0 // remembered: no texts for this provider
	}
	a.pubs[provider] = handle(h)
	return handle(h)
}

// formatMessage sizes its buffer in characters with a probing call, plus
// slack (EvtFormatMessage has been seen writing past the stated size).
func formatMessage(pub, ev handle, flag uintptr) (string, error) {
	var used uint32
	_, err := call(procEvtFormatMessage, uintptr(pub), uintptr(ev), 0, 0, 0, flag, 0, 0, uintptr(unsafe.Pointer(&used)))
	if err != nil && !errors.Is(err, errInsufficientBuffer) {
		return "", err
	}
	buf := make([]uint16, used+8)
	_, err = call(procEvtFormatMessage, uintptr(pub), uintptr(ev), 0, 0, 0, flag, uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&used)))
	if err != nil && !errors.Is(err, errUnresolvedInsert) {
		return "", err
	}
	n := min(int(used), len(buf))
	if flag == formatKeyword { // NUL-separated names: keep the NULs
		return string(utf16.Decode(buf[:n])), nil
	}
	return windows.UTF16ToString(buf[:n]), nil
}

// ProcessName is the image name of a process, as Alloy reports it.
func ProcessName(pid uint32) string {
	if pid == 4 {
		return "System"
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return ""
	}
	return filepath.Base(windows.UTF16ToString(buf[:n]))
}

// UserName resolves a SID string to DOMAIN\user.
func UserName(sid string) string {
	s, err := windows.StringToSid(sid)
	if err != nil {
		return ""
	}
	user, domain, _, err := s.LookupAccount("")
	if err != nil {
		return ""
	}
	if domain == "" {
		return user
	}
	return domain + `\` + user
}
