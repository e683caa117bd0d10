package conffile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadConfig follows a Kubernetes ConfigMap mount's chain of links and
// refuses, before reading, every link that leaves its directory or leads
// into a hidden entry.
func TestReadConfigLinks(t *testing.T) {
	const secret = "machine github.com login ci password ghp_0123456789abcdef0123456789abcdef0123"
	for _, tc := range []struct {
		name string
		// setup builds the tree in dir (a repository) beside outside (a
		// home directory) and returns the path to read.
		setup func(t *testing.T, dir, outside string) string
		ok    bool
	}{
		{"a plain file", func(t *testing.T, dir, _ string) string {
			write(t, filepath.Join(dir, "winobs.yaml"), "a: 1\n")
			return filepath.Join(dir, "winobs.yaml")
		}, true},
		{"a ConfigMap mount", func(t *testing.T, dir, _ string) string {
			ts := filepath.Join(dir, "..2026_12_04_15_00_00.123456789")
			os.Mkdir(ts, 0o755)
			write(t, filepath.Join(ts, "winobs.yaml"), "a: 1\n")
			link(t, "..2026_12_04_15_00_00.123456789", filepath.Join(dir, "..data"))
			link(t, "..data/winobs.yaml", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, true},
		{"a link to a sibling", func(t *testing.T, dir, _ string) string {
			write(t, filepath.Join(dir, "prod.yaml"), "a: 1\n")
			link(t, "prod.yaml", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, true},
		{"an absolute link into the same directory", func(t *testing.T, dir, _ string) string {
			os.Mkdir(filepath.Join(dir, "envs"), 0o755)
			write(t, filepath.Join(dir, "envs", "prod.yaml"), "a: 1\n")
			link(t, filepath.Join(dir, "envs", "prod.yaml"), filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, true},
		{"a relative path through a linked directory the operator named", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, "winobs.yaml"), "a: 1\n")
			link(t, outside, filepath.Join(dir, "cfg"))
			return filepath.Join(dir, "cfg", "winobs.yaml")
		}, true},
		{"~/.netrc", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, ".netrc"), secret)
			link(t, filepath.Join(outside, ".netrc"), filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"../../.git-credentials", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, ".git-credentials"), "https://ci:"+secret+"@github.com\n")
			rel, _ := filepath.Rel(dir, filepath.Join(outside, ".git-credentials"))
			link(t, rel, filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"a token file", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, "token"), secret)
			link(t, filepath.Join(outside, "token"), filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"/proc/self/environ", func(t *testing.T, dir, _ string) string {
			link(t, "/proc/self/environ", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"a YAML file of known keys outside", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, "creds.yaml"), "namespace: "+strings.ReplaceAll(secret, " ", "-")+"\n")
			link(t, filepath.Join(outside, "creds.yaml"), filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{".git/config in the repository", func(t *testing.T, dir, _ string) string {
			os.Mkdir(filepath.Join(dir, ".git"), 0o755)
			write(t, filepath.Join(dir, ".git", "config"), "[http]\n\textraheader = AUTHORIZATION: basic "+secret+"\n")
			link(t, ".git/config", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{".env in the repository", func(t *testing.T, dir, _ string) string {
			write(t, filepath.Join(dir, ".env"), "TOKEN="+secret+"\n")
			link(t, ".env", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"a chain whose second hop leaves", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, ".netrc"), secret)
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			link(t, filepath.Join(outside, ".netrc"), filepath.Join(dir, "sub", "x"))
			link(t, "sub/x", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"a chain through a linked subdirectory that leaves", func(t *testing.T, dir, outside string) string {
			write(t, filepath.Join(outside, "winobs.yaml"), secret)
			link(t, outside, filepath.Join(dir, "sub"))
			link(t, "sub/winobs.yaml", filepath.Join(dir, "winobs.yaml"))
			return filepath.Join(dir, "winobs.yaml")
		}, false},
		{"a loop", func(t *testing.T, dir, _ string) string {
			link(t, "b", filepath.Join(dir, "a"))
			link(t, "a", filepath.Join(dir, "b"))
			return filepath.Join(dir, "a")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			path := tc.setup(t, dir, outside)
			b, err := ReadConfig(path, MaxFileSize)
			if tc.ok {
				if err != nil || string(b) != "a: 1\n" {
					t.Fatalf("read %q, %v", b, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q through the link", b)
			}
			if strings.Contains(err.Error(), "ghp_") {
				t.Errorf("the error quotes the secret: %v", err)
			}
			if tc.name != "a loop" && !errors.Is(err, ErrLink) {
				t.Errorf("error %v, want ErrLink", err)
			}
		})
	}
}

// A document that is not a map is described by kind and size, never
// quoted: a config path given directly may still name the wrong file.
func TestDecodeNeverQuotesANonMapDocument(t *testing.T) {
	const secret = "ghp_0123456789abcdef0123456789abcdef0123"
	for _, src := range []string{
		"machine github.com login ci password " + secret,
		"TOKEN=" + secret + "\nOTHER=x\n",
		"- " + secret + "\n",
		"12345678901234567890",
	} {
		var c struct{ A int }
		_, probs := Decode("c.yaml", []byte(src), &c)
		if len(probs) != 1 || strings.Contains(probs.Error(), secret) || strings.Contains(probs.Error(), "1234567890") ||
			!strings.Contains(probs.Error(), "must be a map of fields") || !strings.Contains(probs.Error(), "its text is not shown") {
			t.Errorf("%q: %v", src, probs)
		}
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(fmt.Errorf("link: %w", err))
	}
}
