package loadtest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPU is where processor time went while the message was delivered: the
// event store double, the nodes (or Centrifugo) and the client processes
// (each summed), and the whole machine (every process, other work
// included), over Wall.
type CPU struct {
	Double, Nodes, Clients, Machine, Wall time.Duration
}

func (c CPU) String() string {
	double := ""
	if c.Double > 0 {
		double = fmt.Sprintf(", event store double %v", c.Double.Round(time.Millisecond))
	}
	return fmt.Sprintf("CPU over %v: server %v%s, clients %v; machine %v of %v available",
		c.Wall.Round(time.Millisecond), c.Nodes.Round(time.Millisecond), double,
		c.Clients.Round(time.Millisecond), c.Machine.Round(time.Millisecond), c.available().Round(time.Millisecond))
}

// available is the processor time the machine had over Wall.
func (c CPU) available() time.Duration { return c.Wall * time.Duration(runtime.NumCPU()) }

// cpuSample is the CPU times of the benchmark's processes and the machine
// at one moment; zero where /proc cannot tell (not Linux).
type cpuSample struct {
	at                              time.Time
	double, nodes, clients, machine time.Duration
}

// sampleCPU reads the times of the cluster's processes and of clients
// from /proc.
func (c *cluster) sampleCPU(cl *clients) cpuSample {
	return sampleCPU(c.double, c.processes(), cl)
}

// processes are the nodes' processes.
func (c *cluster) processes() []*process {
	servers := make([]*process, len(c.nodes))
	for i, n := range c.nodes {
		servers[i] = n.process
	}
	return servers
}

// sampleCPU reads the times of double (when not nil), servers and clients
// from /proc, with the machine's.
func sampleCPU(double *process, servers []*process, cl *clients) cpuSample {
	s := cpuSample{at: time.Now(), machine: machineBusy()}
	if double != nil {
		s.double = processCPU(double.cmd.Process.Pid)
	}
	for _, p := range servers {
		s.nodes += processCPU(p.cmd.Process.Pid)
	}
	for _, cmd := range cl.cmds {
		s.clients += processCPU(cmd.Process.Pid)
	}
	return s
}

// since is the CPU used from earlier to s.
func (s cpuSample) since(earlier cpuSample) CPU {
	return CPU{Double: s.double - earlier.double, Nodes: s.nodes - earlier.nodes, Clients: s.clients - earlier.clients,
		Machine: s.machine - earlier.machine, Wall: s.at.Sub(earlier.at)}
}

// processCPU is the processor time of process pid so far: the time its
// threads ran, to the nanosecond (the schedulers' statistics, summed over
// its threads), or else its user and system time, in clock ticks of 10
// ms: too coarse for a broadcast of a few hundred milliseconds over
// several processes. A thread that has exited no longer counts; a Go
// program keeps its threads.
func processCPU(pid int) time.Duration {
	if d, ok := threadsRunTime(pid); ok {
		return d
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start after its closing parenthesis. utime and stime are fields 14
	// and 15.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// threadsRunTime sums the time the threads of process pid ran (the first
// field of each /proc/PID/task/TID/schedstat, in nanoseconds).
func threadsRunTime(pid int) (time.Duration, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread has just exited
		}
		f, _, _ := strings.Cut(string(data), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// machineBusy is the machine's non-idle processor time so far.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		if i != 3 && i != 4 { // idle and iowait
			busy += v
		}
	}
	return time.Duration(busy) * clockTick
}
