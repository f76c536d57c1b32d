package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// What the processes and the machine use: CPU, memory, profiles, read from
// /proc.

// startProfile starts a CPU profile written to path, {node} replaced by
// node, and returns what stops it; nothing when path is empty.
func startProfile(path, node string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(strings.ReplaceAll(path, "{node}", node))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// quiet waits for a quarter of a second in which the machine's cores are
// less than a quarter busy in all (ClickHouse still inserting, a process
// still collecting garbage), for at most 30 s: a machine that stays busy is
// logged and measured anyway.
func quiet(ctx context.Context, log io.Writer) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		busy0, total0 := machineTicks()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		cores := busyCores(busy0, total0)
		if cores < 0.25 {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(log, "the machine stayed busy (%.2f cores); measuring anyway\n", cores)
			return nil
		}
	}
}

// sampleMemory samples the resident memory of each process every 50ms
// until the returned function is called; it returns the peaks in MiB, all
// pages and anonymous pages only.
func sampleMemory(procs map[string]int) func() (rss, anon map[string]float64) {
	rss, anon := map[string]float64{}, map[string]float64{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			for name, pid := range procs {
				r, a := residentMiB(pid)
				rss[name], anon[name] = max(rss[name], r), max(anon[name], a)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() (map[string]float64, map[string]float64) {
		close(stop)
		<-done
		return rss, anon
	}
}

// startCPU starts counting the processor time of the processes and of the
// whole machine; the returned function gives each process's seconds since
// then and the average number of busy cores.
func startCPU(groups ...map[string]int) func() (map[string]float64, float64) {
	before := map[string]float64{}
	for _, g := range groups {
		for name, pid := range g {
			before[name] = cpuSeconds(pid)
		}
	}
	pg0 := postgresSeconds()
	busy0, total0 := machineTicks()
	return func() (map[string]float64, float64) {
		used := map[string]float64{}
		for _, g := range groups {
			for name, pid := range g {
				used[name] = cpuSeconds(pid) - before[name]
			}
		}
		for pid, sec := range postgresSeconds() {
			used["postgres"] += sec - pg0[pid] // a backend started since counts whole
		}
		return used, busyCores(busy0, total0)
	}
}

// cpuSeconds is the processor time a process has used; 0 when unknown.
// It is the sum of its threads' run times in nanoseconds
// (/proc/<pid>/task/*/schedstat) where the kernel keeps them, and the
// user and system times of /proc/<pid>/stat, in whole clock ticks of
// 10 ms, otherwise: a fake push service that spends 30 µs on each of 300
// pushes uses less than one tick, which a tick's count reads as none.
func cpuSeconds(pid int) float64 {
	if sec, ok := threadSeconds(pid); ok {
		return sec
	}
	return statSeconds(pid)
}

// threadSeconds sums the run time of a process's live threads, the first
// field of each one's schedstat; ok is false when they cannot be read.
// The threads that have exited are not counted: the senders measured are
// Go processes, whose threads live as long as they do, and PostgreSQL's
// processes have one thread each.
func threadSeconds(pid int) (sec float64, ok bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var ns uint64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // the thread has exited since the listing
			}
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		ns += n
	}
	return float64(ns) / 1e9, true
}

// statSeconds is the user and system time of /proc/<pid>/stat.
func statSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name: state is the first, utime the 12th.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseFloat(f[11], 64)
	sys, _ := strconv.ParseFloat(f[12], 64)
	return (user + sys) / clockTicks
}

// postgresSeconds is the processor time of each PostgreSQL process on the
// machine (the server and its backends), by pid.
func postgresSeconds() map[int]float64 {
	out := map[int]float64{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "postgres" {
			out[pid] = cpuSeconds(pid)
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on Linux.
const clockTicks = 100

// busyCores is the machine's average number of busy cores since
// machineTicks read busy0 and total0.
func busyCores(busy0, total0 uint64) float64 {
	busy1, total1 := machineTicks()
	if total1 <= total0 {
		return 0
	}
	return float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU())
}

// machineTicks reads the busy and total time of all cores from /proc/stat.
func machineTicks() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice],
	// the guest times being part of user and nice already.
	f := strings.Fields(line)
	for i, v := range f[1:min(len(f), 9)] {
		n, _ := strconv.ParseUint(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// residentMiB reads a process's resident memory (VmRSS) and its anonymous
// part (RssAnon) in MiB; 0 when unknown.
func residentMiB(pid int) (rss, anon float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	kib := func(v string) float64 {
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		return float64(n) / 1024
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = kib(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kib(v)
		}
	}
	return rss, anon
}
