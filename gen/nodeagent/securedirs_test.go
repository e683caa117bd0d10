package nodeagent

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/winobs/winobs/gen/config"
)

// The directories and the plan reach the step as data: a value that would
// run as script text lands in the environment only, and the script is the
// same constant whatever the directories; it matches every path of the
// plan again with the config's own pattern, which admits neither the
// separators nor the hostile text.
func TestSecureDirsAreDataNotScript(t *testing.T) {
	hostile := `C:\x$(Remove-Item C:\ -Recurse)'; calc; '`
	c := SecureDirsContainer("img", `C:\var\lib\alloy`, hostile)
	if script := c.Command[len(c.Command)-1]; script != SecureDirsScript || strings.Contains(script, "Remove-Item") || strings.Contains(script, `C:\var`) {
		t.Errorf("the script is not the constant:\n%s", script)
	}
	if len(c.Env) != 2 || c.Env[0].Name != SecureDirsEnv || c.Env[0].Value != `C:\var\lib\alloy|`+hostile ||
		c.Env[1].Name != SecureDirsPlanEnv || !strings.HasPrefix(c.Env[1].Value, `guard:C:\var|guard:C:\var\lib|close:C:\var\lib\alloy.quarantine|`) {
		t.Errorf("env = %+v", c.Env)
	}
	for _, want := range []string{
		"$path -cnotmatch '" + config.WindowsPathPattern + "'",
		"Assert-WindowsPath $path\n", // every step's path
		"Assert-WindowsPath $to;",    // and a sweep's quarantine
		"default { throw \"unknown step: ${verb}\" }",
	} {
		if !strings.Contains(SecureDirsScript, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	re := regexp.MustCompile(config.WindowsPathPattern)
	for _, bad := range []string{hostile, `C:\a|b`, `C:\a>b`, `C:\a'b`, `\\server\share`, `C:\a b`} {
		if re.MatchString(bad) {
			t.Errorf("the pattern admits %q", bad)
		}
	}
	if !re.MatchString(`C:\var\lib\alloy`) || !re.MatchString(Quarantine(`C:\var\lib\alloy`)) || c.Resources.Limits.Memory().IsZero() {
		t.Error("the pattern refuses the default path or its quarantine, or the step has no memory limit")
	}
}

// Issue 68: the step's decisions, made in Go. Every ancestor of a closed
// directory below the volume root is guarded (no one but SYSTEM and
// Administrators may delete or rename it afterwards), the root's child
// first, each once; an ancestor that is itself closed is not guarded. Each
// directory's quarantine is closed before it, and what is planted in it is
// swept there: a sibling, outside the tree the agent reads, the outermost
// directory's when one is inside another. The order: guards, then the
// quarantine, then the directory, then its sweep.
func TestSecureDirsPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"Alloy's default storage path", []string{`C:\var\lib\winobs-alloy`}, []string{
			`guard:C:\var`, `guard:C:\var\lib`,
			`close:C:\var\lib\winobs-alloy.quarantine`, `close:C:\var\lib\winobs-alloy`,
			`sweep:C:\var\lib\winobs-alloy>C:\var\lib\winobs-alloy.quarantine`}},
		{"two directories share their ancestors, guarded once", []string{`C:\var\lib\a`, `C:\VAR\lib\b\`}, []string{
			`guard:C:\var`, `guard:C:\var\lib`,
			`close:C:\var\lib\a.quarantine`, `close:C:\var\lib\a`, `sweep:C:\var\lib\a>C:\var\lib\a.quarantine`,
			`close:C:\VAR\lib\b.quarantine`, `close:C:\VAR\lib\b`, `sweep:C:\VAR\lib\b>C:\VAR\lib\b.quarantine`}},
		{"a directory at the volume root has no ancestor to guard", []string{`D:\alloy-data`}, []string{
			`close:D:\alloy-data.quarantine`, `close:D:\alloy-data`, `sweep:D:\alloy-data>D:\alloy-data.quarantine`}},
		{"a directory inside another: the outer one is closed, not guarded, and its quarantine serves both", []string{`C:\data`, `C:\data\textfile`}, []string{
			`close:C:\data.quarantine`, `close:C:\data`, `sweep:C:\data>C:\data.quarantine`,
			`close:C:\data\textfile`, `sweep:C:\data\textfile>C:\data.quarantine`}},
		{"the inner one first: the same quarantine", []string{`C:\data\textfile`, `C:\data`}, []string{
			`close:C:\data.quarantine`, `close:C:\data\textfile`, `sweep:C:\data\textfile>C:\data.quarantine`,
			`close:C:\data`, `sweep:C:\data>C:\data.quarantine`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range SecureDirsPlan(tc.dirs...) {
				got = append(got, s.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			// Every quarantine lies outside every closed directory's tree,
			// and every directory is closed before it is swept.
			closedAt := map[string]int{}
			for i, s := range SecureDirsPlan(tc.dirs...) {
				switch s.Verb {
				case StepClose:
					closedAt[strings.ToLower(s.Path)] = i
				case StepSweep:
					for _, p := range []string{s.Path, s.To} {
						if _, ok := closedAt[strings.ToLower(p)]; !ok {
							t.Errorf("%s swept before %s was closed", s.Path, p)
						}
					}
					for _, d := range tc.dirs {
						d = strings.ToLower(strings.TrimRight(d, `\`))
						if strings.HasPrefix(strings.ToLower(s.To), d+`\`) {
							t.Errorf("the quarantine %s lies inside %s, which an agent may read", s.To, d)
						}
					}
				}
			}
		})
	}
}

// The script carries out each verb in the order that closes the races
// with a user allowed to delete or rename a directory: a guard refuses a
// link or another owner before it denies anything, denies with /L (never
// through a link), and checks again; a close takes a planted quarantine
// aside first, then checks, closes (on a link itself, never its target),
// checks again and refuses any other account left in the ACL; a sweep
// moves into the quarantine under a new GUID name (no name too long, none
// colliding), never renames in place, never deletes.
func TestSecureDirsScript(t *testing.T) {
	s := SecureDirsScript
	body := func(fn string) string {
		i := strings.Index(s, "function "+fn+"(")
		if i < 0 {
			t.Fatalf("no function %s", fn)
		}
		end := strings.Index(s[i:], "\n}\n")
		return s[i : i+end]
	}
	inOrder := func(where, text string, steps ...string) {
		t.Helper()
		at := 0
		for _, step := range steps {
			i := strings.Index(text[at:], step)
			if i < 0 {
				t.Fatalf("%s: %q missing or out of order in:\n%s", where, step, text)
			}
			at += i + len(step)
		}
	}
	inOrder("guard", body("Protect-Ancestor"),
		"if (-not $item.PSIsContainer -or ($item.Attributes -band $reparse)) { throw",
		"if ($owners -notcontains $owner) { throw",
		"right = $rights::Delete; deny = 'DE'",
		"right = $rights::DeleteSubdirectoriesAndFiles; deny = 'DC'",
		"Get-Holders $check.on $check.right 'Allow'",
		"& icacls.exe $check.on /L /deny \"*${who}:($($check.deny))\"",
		"if ($LASTEXITCODE -ne 0) { throw",
		"$denied = @(Get-Holders $check.on $check.right 'Deny')",
		"if ($denied -notcontains $who) { throw")
	inOrder("close", body("Close-Directory"),
		"$path.EndsWith('"+QuarantineSuffix+"')",
		"Move-Aside $path (Split-Path -Parent $path)",
		"[System.IO.Directory]::CreateDirectory($path)",
		"[void](Get-TrustedAcl $path)",
		"& icacls.exe $path /L /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'",
		"if ($LASTEXITCODE -ne 0) { throw",
		"$acl = Get-TrustedAcl $path",
		"if ($trusted -notcontains $rule.IdentityReference.Value) { throw")
	inOrder("sweep", body("Move-Untrusted"),
		"$link = [bool]($entry.Attributes -band $reparse)",
		"if (-not $link) { try { $owner = Get-Owner $entry.FullName } catch { $owner = 'unreadable' } }",
		"if ($link -or $trusted -notcontains $owner) {",
		"Move-Aside $entry.FullName $quarantine",
		"} elseif ($entry.PSIsContainer) { Move-Untrusted $entry.FullName $quarantine }")
	inOrder("move aside", body("Move-Aside"),
		"$to = Join-Path $into ([guid]::NewGuid().ToString())",
		"Move-Item -LiteralPath $path -Destination $to")
	inOrder("each step", s[strings.Index(s, "foreach ($step in"):],
		"'"+StepGuard+"' { Protect-Ancestor $path }",
		"'"+StepClose+"' { Close-Directory $path }",
		"'"+StepSweep+"' { Assert-WindowsPath $to; [void](Get-TrustedAcl $to); Move-Untrusted $path $to }")
	if got := regexp.MustCompile(`\*S-1-[0-9-]+`).FindAllString(body("Close-Directory"), -1); strings.Join(got, " ") != "*S-1-5-18 *S-1-5-32-544" {
		t.Errorf("icacls grants %v, want SYSTEM and Administrators alone", got)
	}
	for _, want := range []string{
		"$ErrorActionPreference = 'Stop'",
		"$trusted = @('S-1-5-18', 'S-1-5-32-544')",
		// An inherit-only entry (CREATOR OWNER's) grants the folder nothing.
		"-not $inheritOnly",
		"[System.IO.FileAttributes]::ReparsePoint",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	for _, never := range []string{"Remove-Item", "-Recurse", "Rename-Item", ".aside-untrusted-"} {
		if strings.Contains(s, never) {
			t.Errorf("the script holds %q: it may only move aside, into a quarantine, what it did not write", never)
		}
	}
}
