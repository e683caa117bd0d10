package state

import (
	"errors"
	"fmt"
	"os"
)

// ErrUntrusted marks a state file owned by an account the shipper does not
// trust: one it did not write, planted to make it skip or replay events
// (a checkpoint's checksum is no secret). Such a file is ignored as if
// absent, and reported.
var ErrUntrusted = errors.New("not owned by the shipper's account, SYSTEM or Administrators (root on Linux)")

// SecureDir makes dir the shipper's own before any state in it is read:
// created if missing; refused if it is a link or another reparse point
// (the shipper's writes would land elsewhere), not a directory, or owned
// by an account the shipper does not trust (by Windows' default ACL of C:\
// any user may create C:\var\lib\… first and own it); otherwise closed to
// every other account: mode 0700, or on Windows a protected DACL granting
// SYSTEM, Administrators and the shipper's own account alone, which drops
// the Authenticated Users rights a directory under C:\ inherits. Every
// check is on one handle that never follows a link.
func SecureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := openDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w: a state directory must be a directory of its own, not a link or a reparse point, which would send the shipper's writes elsewhere; remove it and the shipper creates it", dir, err)
	}
	defer f.Close()
	who, trusted, err := owner(f)
	switch {
	case err != nil:
		return fmt.Errorf("%s: reading its owner: %w", dir, err)
	case !trusted:
		return fmt.Errorf("%s is owned by %s, %w: a checkpoint planted there could make the shipper skip or replay events; remove the directory (the shipper creates it) or give it to SYSTEM (takeown /s, icacls /setowner; chown on Linux)", dir, who, ErrUntrusted)
	}
	if err := protect(f); err != nil {
		return fmt.Errorf("%s: closing it to other accounts: %w", dir, err)
	}
	return nil
}

// trustedFile returns f when its owner is trusted, else closes it and
// returns an error wrapping ErrUntrusted that names the owner.
func trustedFile(f *os.File, path string) (*os.File, error) {
	who, trusted, err := owner(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: reading its owner: %w", path, err)
	}
	if !trusted {
		f.Close()
		return nil, fmt.Errorf("%s is owned by %s, %w: ignored", path, who, ErrUntrusted)
	}
	return f, nil
}
