package nodeagent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs/config"
)

// SecureDirsEnv carries the directories the secure-directories step closes,
// separated by '|' (which no validated Windows path holds): data, never
// script text.
const SecureDirsEnv = "WINOBS_SECURE_DIRS"

// PowerShell is the command that runs script with the node's Windows
// PowerShell (a HostProcess container runs the node's powershell.exe),
// with no profile, no prompt and no execution policy in the way: every
// PowerShell step of winobs's pods.
func PowerShell(script string) []string {
	return []string{"powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", script}
}

// The accounts a closed directory grants: SYSTEM and Administrators, as
// SIDs (names differ by the node's language).
const (
	systemSID = "S-1-5-18"
	adminsSID = "S-1-5-32-544"
)

// SecureDirsContainer is the init container that makes each directory an
// agent writes on the node SYSTEM's and Administrators' alone before the
// agent starts (Alloy's storage path, the exporter's textfile directory):
// by the default ACL of C:\ any user may create C:\var\lib\… first, or
// write into a directory the kubelet created there, and plant a bookmark
// that makes Alloy skip events or a .prom file the exporter serves. Those
// programs create their directories with no ACL of their own, so the step
// runs before them, in the agent's own image (HostProcess: powershell.exe
// and icacls.exe are the node's). The shipper does the same for its own
// directories in Go (shipper/checkpoint.SecureDir).
func SecureDirsContainer(image string, dirs ...string) corev1.Container {
	return corev1.Container{
		Name:      "secure-directories",
		Image:     image,
		Command:   PowerShell(SecureDirsScript),
		Env:       []corev1.EnvVar{{Name: SecureDirsEnv, Value: strings.Join(dirs, "|")}},
		Resources: StepResources,
	}
}

// SecureDirsScript checks each directory in SecureDirsEnv, closes it to
// every account but SYSTEM and Administrators, checks it again, and moves
// aside what another account put in it. It fails the pod (the agent never
// starts) on a directory that is a link, a junction or a file, or that
// another account owns, naming it and the fix.
//
// An entry is judged without following it: a link is moved aside as it is
// (Get-Acl would read its target, or fail on a dangling one), and an entry
// whose owner cannot be read (an ACL that denies SYSTEM) is moved aside too
// (the directory's full control includes deleting its children), so
// nothing planted can stop the agent from starting.
//
// The order closes the race with a user allowed to delete the directory
// (the Modify right a directory under C:\ inherits): icacls /L changes the
// ACL of a link rather than its target, so a directory swapped for a
// junction before the change gets the ACL on the junction itself and is
// refused by the second check; after the change no one but SYSTEM and
// Administrators can delete or rename it. The walk for planted entries
// runs after the change and never descends into a reparse point.
//
// The script is a constant: the paths arrive in an environment variable
// and are matched against config.WindowsPathPattern again before use.
var SecureDirsScript = strings.Join([]string{
	"$ErrorActionPreference = 'Stop'",
	"$trusted = @('" + systemSID + "', '" + adminsSID + "')",
	"function Get-TrustedAcl([string]$path) {",
	"  $item = Get-Item -LiteralPath $path -Force",
	"  if (-not $item.PSIsContainer -or ($item.Attributes -band [System.IO.FileAttributes]::ReparsePoint)) { throw \"${path} is a link, a junction or a file, which would send the agent's writes elsewhere: remove it and this step creates the directory\" }",
	"  $acl = Get-Acl -LiteralPath $path",
	"  $owner = $acl.GetOwner([System.Security.Principal.SecurityIdentifier]).Value",
	"  if ($trusted -notcontains $owner) { throw \"${path} is owned by ${owner}, not SYSTEM or Administrators: what it holds could make the agent skip events or serve false metrics; remove it (this step creates it) or give it to SYSTEM (takeown /f, icacls /setowner)\" }",
	"  return $acl",
	"}",
	"function Move-Untrusted([string]$path) {",
	"  foreach ($entry in @(Get-ChildItem -LiteralPath $path -Force)) {",
	"    $link = [bool]($entry.Attributes -band [System.IO.FileAttributes]::ReparsePoint)",
	"    $owner = 'unknown'",
	"    if (-not $link) { try { $owner = (Get-Acl -LiteralPath $entry.FullName).GetOwner([System.Security.Principal.SecurityIdentifier]).Value } catch { $owner = 'unreadable' } }",
	"    if ($link -or $trusted -notcontains $owner) {",
	"      $aside = $entry.Name + '.aside-untrusted-' + (Get-Date -Format 'yyyyMMddHHmmss')",
	"      Rename-Item -LiteralPath $entry.FullName -NewName $aside",
	"      Write-Output \"moved aside $($entry.FullName) (owner ${owner}, link ${link}) to ${aside}: not written by SYSTEM or Administrators\"",
	"    } elseif ($entry.PSIsContainer) { Move-Untrusted $entry.FullName }",
	"  }",
	"}",
	"foreach ($dir in @($env:" + SecureDirsEnv + " -split '\\|' | Where-Object { $_ -ne '' })) {",
	"  if ($dir -cnotmatch '" + config.WindowsPathPattern + "') { throw \"not an absolute Windows path: ${dir}\" }",
	"  [void][System.IO.Directory]::CreateDirectory($dir)",
	"  [void](Get-TrustedAcl $dir)",
	"  & icacls.exe $dir /L /inheritance:r /grant:r '*" + systemSID + ":(OI)(CI)F' '*" + adminsSID + ":(OI)(CI)F' | Out-Null",
	"  if ($LASTEXITCODE -ne 0) { throw \"icacls could not close ${dir} (exit $LASTEXITCODE)\" }",
	"  $acl = Get-TrustedAcl $dir",
	"  foreach ($rule in @($acl.GetAccessRules($true, $true, [System.Security.Principal.SecurityIdentifier]))) {",
	"    if ($trusted -notcontains $rule.IdentityReference.Value) { throw \"${dir} still grants $($rule.IdentityReference.Value) access: remove that entry (icacls ${dir} /remove:g *$($rule.IdentityReference.Value))\" }",
	"  }",
	"  Move-Untrusted $dir",
	"  Write-Output \"${dir}: owned by $($acl.GetOwner([System.Security.Principal.SecurityIdentifier]).Value), open to SYSTEM and Administrators alone\"",
	"}",
}, "\n")

// StepResources bound a one-shot PowerShell step like every container.
var StepResources = Resources(config.Resources{
	Requests: map[string]string{"cpu": "50m", "memory": "64Mi"},
	Limits:   map[string]string{"memory": "256Mi"},
})
