package wineventlog

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// The live path cannot run here, so its contract with wevtapi.dll is held
// to the headers Windows programs are compiled against: mingw-w64's
// winevt.h and winerror.h (Debian's mingw-w64-x86-64-dev, which CI
// installs; `make winapi-check` requires it). Every flag and error code,
// the EVT_VARIANT layout, and the number of arguments of every call.

// mingwInclude is where Debian installs the headers; WINOBS_MINGW_INCLUDE
// overrides it.
func mingwInclude(t *testing.T) string {
	dir := os.Getenv("WINOBS_MINGW_INCLUDE")
	if dir == "" {
		dir = "/usr/x86_64-w64-mingw32/include"
	}
	if _, err := os.Stat(dir + "/winevt.h"); err != nil {
		if os.Getenv("WINOBS_REQUIRE_MINGW") != "" {
			t.Fatalf("mingw-w64 headers missing (%v): apt-get install mingw-w64-x86-64-dev", err)
		}
		t.Skip("mingw-w64 headers missing: apt-get install mingw-w64-x86-64-dev (CI and make winapi-check run this)")
	}
	return dir
}

func header(t *testing.T, name string) string {
	b, err := os.ReadFile(mingwInclude(t) + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	reEnum   = regexp.MustCompile(`\b(Evt\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+)`)
	reDefine = regexp.MustCompile(`#define\s+(\w+)\s+__MSABI_LONG\((\d+)\)`)
	reProto  = regexp.MustCompile(`(?s)WINAPI\s+(Evt\w+)\s*\(([^;]*?)\)\s*;`)
)

func TestConstantsMatchTheHeaders(t *testing.T) {
	values := map[string]int64{}
	for _, m := range reEnum.FindAllStringSubmatch(header(t, "winevt.h"), -1) {
		v, _ := strconv.ParseInt(m[2], 0, 64)
		values[m[1]] = v
	}
	for _, m := range reDefine.FindAllStringSubmatch(header(t, "winerror.h"), -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		values[m[1]] = v
	}
	for _, c := range []struct {
		name string
		got  int64
	}{
		{"EvtSubscribeToFutureEvents", subscribeToFutureEvents},
		{"EvtSubscribeStartAtOldestRecord", subscribeStartAtOldestRecord},
		{"EvtSubscribeStartAfterBookmark", subscribeStartAfterBookmark},
		{"EvtSubscribeStrict", subscribeStrict},
		{"EvtRenderEventXml", renderEventXML},
		{"EvtRenderBookmark", renderBookmark},
		{"EvtQueryChannelPath", queryChannelPath},
		{"EvtQueryReverseDirection", queryReverseDirection},
		{"EvtFormatMessageEvent", formatEvent},
		{"EvtFormatMessageLevel", formatLevel},
		{"EvtFormatMessageTask", formatTask},
		{"EvtFormatMessageOpcode", formatOpcode},
		{"EvtFormatMessageKeyword", formatKeyword},
		{"EvtOpenChannelPath", openChannelPath},
		{"EvtLogNumberOfLogRecords", logNumberOfLogRecords},
		{"EvtLogOldestRecordNumber", logOldestRecordNumber},
		{"ERROR_INSUFFICIENT_BUFFER", int64(errInsufficientBuffer)},
		{"ERROR_NO_MORE_ITEMS", int64(errNoMoreItems)},
		{"ERROR_NOT_FOUND", int64(errNotFound)},
		{"RPC_S_INVALID_BOUND", int64(rpcInvalidBound)},
		{"ERROR_INVALID_OPERATION", int64(errInvalidOperation)},
		{"ERROR_EVT_UNRESOLVED_VALUE_INSERT", int64(errUnresolvedInsert)},
	} {
		want, ok := values[c.name]
		switch {
		case !ok:
			t.Errorf("%s is not in the headers", c.name)
		case want != c.got:
			t.Errorf("%s = %d in the headers, %d here", c.name, want, c.got)
		}
	}
	var _ syscall.Errno = errNotFound
}

// EVT_VARIANT: an 8-byte union, then DWORD Count and DWORD Type, 16 bytes
// (the same on amd64 and arm64 Windows).
func TestEvtVariantLayout(t *testing.T) {
	h := header(t, "winevt.h")
	start := strings.Index(h, "typedef struct _EVT_VARIANT {")
	end := strings.Index(h[start:], "} EVT_VARIANT")
	if start < 0 || end < 0 {
		t.Fatal("EVT_VARIANT not found in winevt.h")
	}
	body := h[start : start+end]
	union := strings.LastIndex(body, "}")
	fields := strings.Fields(strings.NewReplacer(";", " ").Replace(body[union+1:]))
	if want := []string{"DWORD", "Count", "DWORD", "Type"}; fmt.Sprint(fields) != fmt.Sprint(want) {
		t.Errorf("after the union the header has %v, want %v", fields, want)
	}
	if !strings.Contains(body, "UINT64") || strings.Contains(body[:union], "struct {") {
		t.Error("the union's widest member is no longer a plain 8-byte value")
	}
	var v evtVariant
	if unsafe.Sizeof(v) != 16 || unsafe.Offsetof(v.Count) != 8 || unsafe.Offsetof(v.Type) != 12 {
		t.Errorf("evtVariant: size %d, Count at %d, Type at %d", unsafe.Sizeof(v), unsafe.Offsetof(v.Count), unsafe.Offsetof(v.Type))
	}
}

// Every call in wineventlog.go passes as many arguments as the function's
// prototype in winevt.h takes: a missing or extra argument would read
// garbage from the stack on Windows, and nothing here could notice.
func TestCallsMatchThePrototypes(t *testing.T) {
	params := map[string]int{}
	for _, m := range reProto.FindAllStringSubmatch(header(t, "winevt.h"), -1) {
		p := strings.TrimSpace(m[2])
		n := 0
		if p != "" && p != "VOID" && p != "void" {
			n = strings.Count(p, ",") + 1
		}
		params[m[1]] = n
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "wineventlog.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	procs := map[string]string{} // Go variable -> function name
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 1 {
			if c, ok := vs.Values[0].(*ast.CallExpr); ok && len(c.Args) == 1 {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewProc" {
					if lit, ok := c.Args[0].(*ast.BasicLit); ok {
						procs[vs.Names[0].Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
		return true
	})
	calls := 0
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var proc string
		var args int
		switch fn := c.Fun.(type) {
		case *ast.Ident: // call(procX, args...)
			if fn.Name == "call" && len(c.Args) > 0 {
				if id, ok := c.Args[0].(*ast.Ident); ok {
					proc, args = id.Name, len(c.Args)-1
				}
			}
		case *ast.SelectorExpr: // procX.Call(args...)
			if id, ok := fn.X.(*ast.Ident); ok && fn.Sel.Name == "Call" {
				proc, args = id.Name, len(c.Args)
			}
		}
		if proc == "" || c.Ellipsis.IsValid() {
			return true
		}
		name, ok := procs[proc]
		if !ok {
			return true
		}
		calls++
		want, ok := params[name]
		switch {
		case !ok:
			t.Errorf("%s: %s is not declared in winevt.h", fset.Position(c.Pos()), name)
		case args != want:
			t.Errorf("%s: %s called with %d arguments, winevt.h declares %d", fset.Position(c.Pos()), name, args, want)
		}
		return true
	})
	if len(procs) < 11 || calls < len(procs) {
		t.Errorf("found %d procs and %d calls: the parser no longer sees the calls", len(procs), calls)
	}
}
