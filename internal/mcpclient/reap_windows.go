package mcpclient

import (
	"os/exec"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows every server runs in a job object of its own that ends all
// of its processes when it is stopped, or when etdi exits however it
// exits (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: the last handle to the job
// is etdi's). A process the server starts belongs to the job, detached
// or not. The server is placed in the job right after it is created, so a
// process it started in that instant, before its first instructions ran
// in the job, would be outside it.

// AdoptOrphans reports that the processes a server starts end with it:
// on Windows the job object does it, whatever this program is.
func AdoptOrphans() bool { return true }

type tree struct{ job windows.Handle }

// watch places the started server in a new job object.
func watch(cmd *exec.Cmd) *tree {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return &tree{}
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return &tree{}
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return &tree{}
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return &tree{}
	}
	return &tree{job: job}
}

// end ends every process of the server's job.
func (t *tree) end(deadline time.Time) {
	if t.job != 0 {
		windows.TerminateJobObject(t.job, 1)
	}
}

// forget closes the job.
func (t *tree) forget() {
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}
