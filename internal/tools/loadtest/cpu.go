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
// event store double, the nodes and the client processes (each summed), and
// the whole machine (every process, other work included), over Wall.
type CPU struct {
	Double, Nodes, Clients, Machine, Wall time.Duration
}

func (c CPU) String() string {
	return fmt.Sprintf("CPU over %v: nodes %v, event store double %v, clients %v; machine %v of %v available",
		c.Wall.Round(time.Millisecond), c.Nodes.Round(time.Millisecond), c.Double.Round(time.Millisecond),
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

// sampleCPU reads the times of the cluster's processes and of clients:
// from /proc while they run, from their exit status once wait has
// returned (exited).
func (c *cluster) sampleCPU(cl *clients, exited bool) cpuSample {
	s := cpuSample{at: time.Now(), machine: machineBusy()}
	if c.double != nil {
		s.double = processCPU(c.double.cmd.Process.Pid)
	}
	for _, n := range c.nodes {
		s.nodes += processCPU(n.cmd.Process.Pid)
	}
	for _, cmd := range cl.cmds {
		if exited {
			s.clients += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		} else {
			s.clients += processCPU(cmd.Process.Pid)
		}
	}
	return s
}

// since is the CPU used from earlier to s.
func (s cpuSample) since(earlier cpuSample) CPU {
	return CPU{Double: s.double - earlier.double, Nodes: s.nodes - earlier.nodes, Clients: s.clients - earlier.clients,
		Machine: s.machine - earlier.machine, Wall: s.at.Sub(earlier.at)}
}

// processCPU is the user and system time of process pid so far.
func processCPU(pid int) time.Duration {
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
