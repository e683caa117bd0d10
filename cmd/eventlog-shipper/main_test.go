package main

import (
	"bytes"
	"strings"
	"testing"
)

// --help answers on stdout with exit 0 and names both modes; --version
// prints the build's version; a missing --config is a usage error.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "eventlog-shipper probe URL"},
		{[]string{"-h"}, 0, "--state-dir"},
		{[]string{"--version"}, 0, "eventlog-shipper dev"},
		{nil, 2, ""},
		{[]string{"--bogus"}, 2, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", tc.args, code, stdout.String(), stderr.String())
		}
		if tc.code == 2 && !strings.Contains(stderr.String(), "probe URL") {
			t.Errorf("%v: the usage error does not show the usage: %s", tc.args, stderr.String())
		}
	}
}
