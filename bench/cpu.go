package bench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuWindow samples the CPU time of processes at the start and the end of
// the measured window.
type cpuWindow struct {
	done           chan struct{}
	server, client float64
}

func startCPU(pids []int, from, until time.Time) *cpuWindow {
	w := &cpuWindow{done: make(chan struct{})}
	self := os.Getpid()
	go func() {
		defer close(w.done)
		time.Sleep(time.Until(from))
		s0, c0 := cpuSeconds(pids), cpuSeconds([]int{self})
		time.Sleep(time.Until(until))
		w.server, w.client = cpuSeconds(pids)-s0, cpuSeconds([]int{self})-c0
	}()
	return w
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
