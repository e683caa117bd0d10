package nodeagent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/winobs/winobs/gen/config"
)

// SecureDirsEnv carries the directories the secure-directories step closes,
// separated by '|' (which no validated Windows path holds): data, never
// script text. SecureDirsPlanEnv carries the steps that close them
// (SecureDirsPlan), each as SecureDirStep.String writes it, '|' between.
const (
	SecureDirsEnv     = "WINOBS_SECURE_DIRS"
	SecureDirsPlanEnv = "WINOBS_SECURE_PLAN"
)

// PowerShell is the command that runs script with the node's Windows
// PowerShell (a HostProcess container runs the node's powershell.exe),
// with no profile, no prompt and no execution policy in the way: every
// PowerShell step of winobs's pods.
func PowerShell(script string) []string {
	return []string{"powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", script}
}

// The accounts a closed directory grants: SYSTEM and Administrators, as
// SIDs (names differ by the node's language). TrustedInstaller owns much of
// a volume's root, and may own an ancestor of a closed directory.
const (
	systemSID           = "S-1-5-18"
	adminsSID           = "S-1-5-32-544"
	trustedInstallerSID = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
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
// directories in Go (shipper/state.SecureDir).
func SecureDirsContainer(image string, dirs ...string) corev1.Container {
	var plan []string
	for _, s := range SecureDirsPlan(dirs...) {
		plan = append(plan, s.String())
	}
	return corev1.Container{
		Name:    "secure-directories",
		Image:   image,
		Command: PowerShell(SecureDirsScript),
		Env: []corev1.EnvVar{{Name: SecureDirsEnv, Value: strings.Join(dirs, "|")},
			{Name: SecureDirsPlanEnv, Value: strings.Join(plan, "|")}},
		Resources: StepResources,
	}
}

// The verbs of the secure-directories step (SecureDirStep).
const (
	// StepGuard: an ancestor of a closed directory, which no one but
	// SYSTEM and Administrators may delete or rename afterwards.
	StepGuard = "guard"
	// StepClose: a directory made SYSTEM's and Administrators' alone.
	StepClose = "close"
	// StepSweep: every entry under a closed directory that another
	// account owns, or a link, moved into its quarantine.
	StepSweep = "sweep"
)

// SecureDirStep is one step of the secure-directories init container,
// decided here in Go (and tested on Linux), carried out by the constant
// script.
type SecureDirStep struct {
	Verb string
	// Path is the directory; To, for a sweep, the quarantine.
	Path, To string
}

// String is the step as the script reads it: guard:C:\var,
// close:C:\var\lib\x, sweep:C:\var\lib\x>C:\var\lib\x.quarantine ('>' and
// '|' are in no validated Windows path).
func (s SecureDirStep) String() string {
	if s.To != "" {
		return s.Verb + ":" + s.Path + ">" + s.To
	}
	return s.Verb + ":" + s.Path
}

// QuarantineSuffix ends the name of a quarantine (Quarantine).
const QuarantineSuffix = ".quarantine"

// Quarantine is where the step moves what another account put under dir:
// a sibling of dir, closed like it, outside every tree an agent reads (the
// exporter's textfile collector walks its directory recursively, so a
// planted directory renamed in place would still be read).
func Quarantine(dir string) string { return strings.TrimRight(dir, `\`) + QuarantineSuffix }

// SecureDirsPlan is what the step does, in order, for dirs: for each, its
// ancestors below the volume root first (each once, the root's child
// first: a user who may rename C:\var could rebuild the whole path with
// directories of their own between the step's last check and the agent
// opening its files), then its quarantine and the directory closed, then
// the directory swept into the quarantine. An ancestor that is itself a
// directory of the plan is closed, which is stronger, not guarded; and a
// directory inside another of the plan uses the outer one's quarantine,
// so every quarantine lies outside every closed tree.
func SecureDirsPlan(dirs ...string) []SecureDirStep {
	closed := map[string]bool{}
	for _, d := range dirs {
		closed[strings.ToLower(strings.TrimRight(d, `\`))] = true
	}
	// A directory inside another of the plan shares the outer one's
	// quarantine: its own sibling would lie inside the outer tree, which an
	// agent may read recursively.
	outermost := func(d string) string {
		parts := strings.Split(d, `\`)
		for i := 2; i < len(parts); i++ {
			if a := strings.Join(parts[:i], `\`); closed[strings.ToLower(a)] {
				return a
			}
		}
		return d
	}
	guarded := map[string]bool{}
	var plan []SecureDirStep
	for _, d := range dirs {
		d = strings.TrimRight(d, `\`)
		parts := strings.Split(d, `\`) // "C:", "var", "lib", …
		for i := 2; i < len(parts); i++ {
			a := strings.Join(parts[:i], `\`)
			if key := strings.ToLower(a); !guarded[key] && !closed[key] {
				guarded[key] = true
				plan = append(plan, SecureDirStep{Verb: StepGuard, Path: a})
			}
		}
		q := Quarantine(outermost(d))
		if key := strings.ToLower(q); !guarded[key] {
			guarded[key] = true // closed once
			plan = append(plan, SecureDirStep{Verb: StepClose, Path: q})
		}
		plan = append(plan, SecureDirStep{Verb: StepClose, Path: d}, SecureDirStep{Verb: StepSweep, Path: d, To: q})
	}
	return plan
}

// SecureDirsScript carries out SecureDirsPlan's steps, read from
// SecureDirsPlanEnv, each path matched against config.WindowsPathPattern
// again before use:
//
//   - guard: the ancestor must be a directory (not a link, junction or
//     file) owned by SYSTEM, Administrators or TrustedInstaller, else the
//     step fails naming it and the fix; every other account an allow entry
//     lets delete or rename it (Delete on it, or Delete subfolders and
//     files on its parent) gets an explicit deny of exactly that right,
//     this folder only (icacls /deny …:(DE), …:(DC)), and the check is made
//     again. Modify, which a folder under C:\ inherits for Authenticated
//     Users, includes Delete. The deny binds every member of the group,
//     SYSTEM and administrators included, until an administrator removes
//     it: nothing renames the path an agent opens.
//   - close: a directory the step creates or finds. Its quarantine, if
//     another account planted that name (a directory of theirs, a link, a
//     file), is first moved aside to a new GUID name in its parent, which
//     no agent reads, never deleted; the agent's own directory owned by
//     another account, or a link, is refused naming the fix. Then icacls
//     /L /inheritance:r grants SYSTEM and Administrators alone (/L: a
//     directory swapped for a junction in between gets the ACL on the
//     junction itself, and the check after it refuses), and the check is
//     made again.
//   - sweep: every entry under the directory that another account owns,
//     whose owner cannot be read (an ACL that denies SYSTEM), or that is a
//     link, judged without following it and never descending into one, is
//     moved into the quarantine under a new GUID name: no name is too long
//     for it, none collides, and nothing is deleted.
//
// The script is a constant: the plan arrives in an environment variable.
var SecureDirsScript = strings.Join([]string{
	"$ErrorActionPreference = 'Stop'",
	"$trusted = @('" + systemSID + "', '" + adminsSID + "')",
	"$owners = $trusted + @('" + trustedInstallerSID + "')",
	"$sid = [System.Security.Principal.SecurityIdentifier]",
	"$reparse = [System.IO.FileAttributes]::ReparsePoint",
	"function Assert-WindowsPath([string]$path) {",
	"  if ($path -cnotmatch '" + config.WindowsPathPattern + "') { throw \"not an absolute Windows path: ${path}\" }",
	"}",
	"function Get-Owner([string]$path) { return (Get-Acl -LiteralPath $path).GetOwner($sid).Value }",
	"function Get-TrustedAcl([string]$path) {",
	"  $item = Get-Item -LiteralPath $path -Force",
	"  if (-not $item.PSIsContainer -or ($item.Attributes -band $reparse)) { throw \"${path} is a link, a junction or a file, which would send the agent's writes elsewhere: remove it and this step creates the directory\" }",
	"  $acl = Get-Acl -LiteralPath $path",
	"  $owner = $acl.GetOwner($sid).Value",
	"  if ($trusted -notcontains $owner) { throw \"${path} is owned by ${owner}, not SYSTEM or Administrators: what it holds could make the agent skip events or serve false metrics; remove it (this step creates it) or give it to SYSTEM (takeown /f, icacls /setowner)\" }",
	"  return $acl",
	"}",
	"function Get-Holders([string]$path, $right, [string]$type) {",
	"  $out = @()",
	"  foreach ($rule in @((Get-Acl -LiteralPath $path).GetAccessRules($true, $true, $sid))) {",
	"    $inheritOnly = [bool]($rule.PropagationFlags -band [System.Security.AccessControl.PropagationFlags]::InheritOnly)",
	"    if ([string]$rule.AccessControlType -eq $type -and -not $inheritOnly -and ($rule.FileSystemRights -band $right) -and $trusted -notcontains $rule.IdentityReference.Value) { $out += $rule.IdentityReference.Value }",
	"  }",
	"  return @($out | Select-Object -Unique)",
	"}",
	"function Protect-Ancestor([string]$path) {",
	"  $item = Get-Item -LiteralPath $path -Force",
	"  if (-not $item.PSIsContainer -or ($item.Attributes -band $reparse)) { throw \"${path} is a link, a junction or a file above a directory an agent writes, which could send its writes elsewhere: remove it (this step creates the directories)\" }",
	"  $owner = Get-Owner $path",
	"  if ($owners -notcontains $owner) { throw \"${path} is owned by ${owner}, who may rename it and rebuild the path below it with directories of their own: give it to SYSTEM (takeown /f ${path}, then icacls ${path} /setowner *" + systemSID + ")\" }",
	"  $rights = [System.Security.AccessControl.FileSystemRights]",
	"  foreach ($check in @(@{ on = $path; right = $rights::Delete; deny = 'DE' }, @{ on = (Split-Path -Parent $path); right = $rights::DeleteSubdirectoriesAndFiles; deny = 'DC' })) {",
	"    foreach ($who in @(Get-Holders $check.on $check.right 'Allow')) {",
	"      & icacls.exe $check.on /L /deny \"*${who}:($($check.deny))\" | Out-Null",
	"      if ($LASTEXITCODE -ne 0) { throw \"icacls could not deny ${who} the right to delete or rename ${path} (exit $LASTEXITCODE)\" }",
	"      Write-Output \"${path}: denied ${who} ($($check.deny)) on $($check.on): no one but SYSTEM and Administrators may delete or rename it\"",
	"    }",
	"    $denied = @(Get-Holders $check.on $check.right 'Deny')",
	"    foreach ($who in @(Get-Holders $check.on $check.right 'Allow')) {",
	"      if ($denied -notcontains $who) { throw \"${path}: ${who} may still delete or rename it: deny it (icacls $($check.on) /deny *${who}:($($check.deny)))\" }",
	"    }",
	"  }",
	"}",
	"function Move-Aside([string]$path, [string]$into, [string]$why) {",
	"  $to = Join-Path $into ([guid]::NewGuid().ToString())",
	"  Move-Item -LiteralPath $path -Destination $to",
	"  Write-Output \"moved ${path} to ${to}: ${why}\"",
	"}",
	"function Close-Directory([string]$path) {",
	"  if ($path.EndsWith('" + QuarantineSuffix + "') -and (Test-Path -LiteralPath $path)) {",
	"    $item = Get-Item -LiteralPath $path -Force",
	"    $owner = 'unreadable'",
	"    if (-not ($item.Attributes -band $reparse)) { try { $owner = Get-Owner $path } catch { $owner = 'unreadable' } }",
	"    if (-not $item.PSIsContainer -or ($item.Attributes -band $reparse) -or $trusted -notcontains $owner) { Move-Aside $path (Split-Path -Parent $path) \"planted where the step keeps its quarantine (owner ${owner})\" }",
	"  }",
	"  [void][System.IO.Directory]::CreateDirectory($path)",
	"  [void](Get-TrustedAcl $path)",
	"  & icacls.exe $path /L /inheritance:r /grant:r '*" + systemSID + ":(OI)(CI)F' '*" + adminsSID + ":(OI)(CI)F' | Out-Null",
	"  if ($LASTEXITCODE -ne 0) { throw \"icacls could not close ${path} (exit $LASTEXITCODE)\" }",
	"  $acl = Get-TrustedAcl $path",
	"  foreach ($rule in @($acl.GetAccessRules($true, $true, $sid))) {",
	"    if ($trusted -notcontains $rule.IdentityReference.Value) { throw \"${path} still grants $($rule.IdentityReference.Value) access: remove that entry (icacls ${path} /remove:g *$($rule.IdentityReference.Value))\" }",
	"  }",
	"  Write-Output \"${path}: owned by $($acl.GetOwner($sid).Value), open to SYSTEM and Administrators alone\"",
	"}",
	"function Move-Untrusted([string]$path, [string]$quarantine) {",
	"  foreach ($entry in @(Get-ChildItem -LiteralPath $path -Force)) {",
	"    $link = [bool]($entry.Attributes -band $reparse)",
	"    $owner = 'unknown'",
	"    if (-not $link) { try { $owner = Get-Owner $entry.FullName } catch { $owner = 'unreadable' } }",
	"    if ($link -or $trusted -notcontains $owner) {",
	"      Move-Aside $entry.FullName $quarantine \"owner ${owner}, link ${link}: not written by SYSTEM or Administrators\"",
	"    } elseif ($entry.PSIsContainer) { Move-Untrusted $entry.FullName $quarantine }",
	"  }",
	"}",
	"foreach ($step in @($env:" + SecureDirsPlanEnv + " -split '\\|' | Where-Object { $_ -ne '' })) {",
	"  $verb, $rest = $step -split ':', 2",
	"  $path, $to = $rest -split '>', 2",
	"  Assert-WindowsPath $path",
	"  switch -CaseSensitive ($verb) {",
	"    '" + StepGuard + "' { Protect-Ancestor $path }",
	"    '" + StepClose + "' { Close-Directory $path }",
	"    '" + StepSweep + "' { Assert-WindowsPath $to; [void](Get-TrustedAcl $to); Move-Untrusted $path $to }",
	"    default { throw \"unknown step: ${verb}\" }",
	"  }",
	"}",
}, "\n")

// StepResources bound a one-shot PowerShell step like every container.
var StepResources = Resources(config.Resources{
	Requests: map[string]string{"cpu": "50m", "memory": "64Mi"},
	Limits:   map[string]string{"memory": "256Mi"},
})
