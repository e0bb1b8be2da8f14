package resources

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
)

// Measure reads pid's RSS, CPU seconds and open files from the kernel
// (gopsutil reads /proc). A process that is gone or unreadable gives what
// could be read and the error.
func Measure(ctx context.Context, role string, id, pid int) Proc {
	p := Proc{Role: role, ID: id, PID: pid}
	gp, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		p.Error = err.Error()
		return p
	}
	var errs []error
	if mi, err := gp.MemoryInfoWithContext(ctx); err != nil {
		errs = append(errs, err)
	} else {
		p.RSS = mi.RSS
	}
	if ct, err := gp.TimesWithContext(ctx); err != nil {
		errs = append(errs, err)
	} else {
		p.CPU = ct.User + ct.System
	}
	if n, err := gp.NumFDsWithContext(ctx); err != nil {
		errs = append(errs, err)
	} else {
		p.OpenFiles = int(n)
	}
	if err := errors.Join(errs...); err != nil {
		p.Error = err.Error()
	}
	return p
}

// DirSize is the disk space the regular files under the dirs take (a
// dir that does not exist counts 0), or -1 when one could not be walked.
// Space, not length: ZooKeeper pads each transaction log to 64 MB ahead
// of its writes with a sparse file, whose length says nothing of what
// the disk holds. A file deleted during the walk (a purge) is skipped.
func DirSize(dirs ...string) int64 {
	var total int64
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return err
			case !e.Type().IsRegular():
				return nil
			}
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			total += diskUsage(info)
			return nil
		})
		if err != nil {
			return -1
		}
	}
	return total
}

// diskUsage is a file's allocated blocks in bytes (its length where the
// system does not say).
func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
