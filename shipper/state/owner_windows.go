//go:build windows

package state

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// openDir opens dir itself: FILE_FLAG_OPEN_REPARSE_POINT opens a symbolic
// link or junction rather than its target, and one is refused.
func openDir(dir string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.READ_CONTROL|windows.WRITE_DAC|windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, err
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 || info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY == 0 {
		windows.CloseHandle(h)
		return nil, errors.New("a reparse point (link, junction) or not a directory")
	}
	return os.NewFile(uintptr(h), dir), nil
}

// self is the shipper's own account (SYSTEM, or the HostProcess pod's
// runAsUserName).
func self() (*windows.SID, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	return u.User.Sid, nil
}

// owner is the open file's owner, trusted when it is SYSTEM,
// Administrators or the shipper's own account.
func owner(f *os.File) (who string, trusted bool, err error) {
	sd, err := windows.GetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", false, err
	}
	sid, _, err := sd.Owner()
	if err != nil {
		return "", false, err
	}
	me, err := self()
	if err != nil {
		return "", false, err
	}
	who = sid.String()
	if account, domain, _, err := sid.LookupAccount(""); err == nil {
		who = domain + `\` + account + " (" + who + ")"
	}
	return who, sid.IsWellKnown(windows.WinLocalSystemSid) || sid.IsWellKnown(windows.WinBuiltinAdministratorsSid) || sid.Equals(me), nil
}

// protect replaces the directory's DACL with a protected one (nothing
// inherited from C:\) granting full control to SYSTEM, Administrators and
// the shipper's account, inherited by what is created in it.
func protect(f *os.File) error {
	me, err := self()
	if err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;" + me.String() + ")")
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetSecurityInfo(windows.Handle(f.Fd()), windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}
