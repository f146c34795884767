package bench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuWindow samples the CPU time of processes at the start and the end of
// the measured window, and a counter when it is given one.
type cpuWindow struct {
	done           chan struct{}
	server, client float64
	count          float64
	countOK        bool
	sched          schedHist // this process's goroutines' waits to run
}

func startCPU(pids []int, from, until time.Time) *cpuWindow {
	return startCPUCounting(pids, from, until, nil)
}

// startCPUCounting is startCPU that also reads count (nil: none) at the
// window's start and end. It is read before the CPU at the start and after
// it at the end, so that what reading it costs is not charged to the
// window.
func startCPUCounting(pids []int, from, until time.Time, count func() (float64, bool)) *cpuWindow {
	w := &cpuWindow{done: make(chan struct{})}
	self := os.Getpid()
	go func() {
		defer close(w.done)
		time.Sleep(time.Until(from))
		n0, ok0 := readCount(count)
		s0, c0, h0 := cpuSeconds(pids), cpuSeconds([]int{self}), readSchedHist()
		time.Sleep(time.Until(until))
		w.server, w.client = cpuSeconds(pids)-s0, cpuSeconds([]int{self})-c0
		w.sched = readSchedHist().since(h0)
		n1, ok1 := readCount(count)
		w.count, w.countOK = n1-n0, ok0 && ok1
	}()
	return w
}

func readCount(count func() (float64, bool)) (float64, bool) {
	if count == nil {
		return 0, false
	}
	return count()
}

// counted waits for the window's end and returns how much the counter
// grew in it, if it was read both times.
func (w *cpuWindow) counted() (float64, bool) {
	<-w.done
	return w.count, w.countOK
}

// waits waits for the window's end and returns how long this process's
// goroutines waited to run in it.
func (w *cpuWindow) waits() schedHist {
	<-w.done
	return w.sched
}

// result waits for the window's end and returns server and client CPU
// seconds.
func (w *cpuWindow) result() (float64, float64) {
	<-w.done
	return w.server, w.client
}

// cpuSeconds sums user and system time from /proc/PID/stat (0 where it
// cannot be read).
func cpuSeconds(pids []int) float64 {
	const ticks = 100 // USER_HZ on Linux
	var sum float64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 13 {
			continue
		}
		u, _ := strconv.ParseFloat(fields[11], 64)
		k, _ := strconv.ParseFloat(fields[12], 64)
		sum += (u + k) / ticks
	}
	return sum
}
