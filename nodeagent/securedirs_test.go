package nodeagent

import (
	"regexp"
	"strings"
	"testing"

	"github.com/winobs/winobs/config"
)

// The directories reach the step as data: a value that would run as script
// text lands in the environment only, and the script is the same constant
// whatever the directories.
func TestSecureDirsAreDataNotScript(t *testing.T) {
	hostile := `C:\x$(Remove-Item C:\ -Recurse)'; calc; '`
	c := SecureDirsContainer("img", `C:\var\lib\alloy`, hostile)
	if script := c.Command[len(c.Command)-1]; script != SecureDirsScript || strings.Contains(script, "Remove-Item") || strings.Contains(script, `C:\var`) {
		t.Errorf("the script is not the constant:\n%s", script)
	}
	if len(c.Env) != 1 || c.Env[0].Name != SecureDirsEnv || c.Env[0].Value != `C:\var\lib\alloy|`+hostile {
		t.Errorf("env = %+v", c.Env)
	}
	// The step matches each path again with the config's own pattern, which
	// never admits the separator or the hostile text.
	if !strings.Contains(SecureDirsScript, "$dir -cnotmatch '"+config.WindowsPathPattern+"'") {
		t.Error("the script does not check each path against config.WindowsPathPattern")
	}
	re := regexp.MustCompile(config.WindowsPathPattern)
	for _, bad := range []string{hostile, `C:\a|b`, `C:\a'b`, `\\server\share`, `C:\a b`} {
		if re.MatchString(bad) {
			t.Errorf("the pattern admits %q", bad)
		}
	}
	if !re.MatchString(`C:\var\lib\alloy`) || c.Resources.Limits.Memory().IsZero() {
		t.Error("the pattern refuses the default path, or the step has no memory limit")
	}
}

// The steps run in the order that closes the race with a user allowed to
// delete the directory: check, close (on a link itself, never its target),
// check again, and only then look inside; the ACL grants SYSTEM and
// Administrators alone, and inherits nothing.
func TestSecureDirsOrder(t *testing.T) {
	s := SecureDirsScript
	loop := s[strings.Index(s, "foreach ($dir in"):]
	steps := []string{
		"[System.IO.Directory]::CreateDirectory($dir)",
		"[void](Get-TrustedAcl $dir)",
		"& icacls.exe $dir /L /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'",
		"if ($LASTEXITCODE -ne 0) { throw",
		"$acl = Get-TrustedAcl $dir",
		"$acl.GetAccessRules($true, $true,",
		"Move-Untrusted $dir",
	}
	at := 0
	for _, step := range steps {
		i := strings.Index(loop[at:], step)
		if i < 0 {
			t.Fatalf("step %q missing or out of order in:\n%s", step, loop)
		}
		at += i + len(step)
	}
	if got := regexp.MustCompile(`\*S-1-[0-9-]+`).FindAllString(loop, -1); strings.Join(got, " ") != "*S-1-5-18 *S-1-5-32-544" {
		t.Errorf("icacls grants %v, want SYSTEM and Administrators alone", got)
	}
	for _, want := range []string{
		"$trusted = @('S-1-5-18', 'S-1-5-32-544')",
		// Refused: a link or junction, a file, another owner.
		"[System.IO.FileAttributes]::ReparsePoint)) { throw",
		"if ($trusted -notcontains $owner) { throw",
		// The walk moves a planted link aside and never descends into one.
		"if ($link -or $trusted -notcontains $owner) {",
		// Never Get-Acl through a link; an unreadable owner is untrusted.
		"if (-not $link) { try { $owner = (Get-Acl -LiteralPath $entry.FullName)",
		"catch { $owner = 'unreadable' }",
		"} elseif ($entry.PSIsContainer) { Move-Untrusted $entry.FullName }",
		"$ErrorActionPreference = 'Stop'",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if strings.Contains(s, "Remove-Item") || strings.Contains(s, "-Recurse") {
		t.Error("the step deletes or recurses blindly; it may only move aside what it did not write")
	}
}
