package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"
)

// setHogAttr has the kernel kill the hog if the parent dies.
func setHogAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cpuMask is a sched_setaffinity mask for up to 1,024 CPUs.
type cpuMask [16]uint64

// pinThread pins the calling OS thread (locked by the caller) to the first
// CPU it may run on, and says which.
func pinThread() string {
	var allowed cpuMask
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(allowed), uintptr(unsafe.Pointer(&allowed))); e != 0 {
		return "not pinned: sched_getaffinity: " + e.Error()
	}
	for cpu := range len(allowed) * 64 {
		if allowed[cpu/64]&(1<<(cpu%64)) == 0 {
			continue
		}
		var one cpuMask
		one[cpu/64] = 1 << (cpu % 64)
		if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(one), uintptr(unsafe.Pointer(&one))); e != 0 {
			return "not pinned: sched_setaffinity: " + e.Error()
		}
		return fmt.Sprintf("pinned to CPU %d", cpu)
	}
	return "not pinned: no CPU in the affinity mask"
}
