package learn

import "syscall"

// osYield gives the processor to other runnable threads, if any
// (sched_yield), so that polling does not starve other processes.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
