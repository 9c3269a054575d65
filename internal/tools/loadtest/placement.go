package loadtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Placement puts the scenario's processes on CPUs: Servers for the servers
// (tvsm's nodes and the event store double, or Centrifugo), Clients for
// the client processes, each a CPU list as taskset(1) takes it ("0",
// "1-3", "0,2"). Empty: wherever the scheduler puts them. On one machine
// the load tool's work otherwise shares the cores of the servers it
// measures. A Go process confined to n CPUs runs with GOMAXPROCS n. A
// result's Placement is what /proc said of the processes.
type Placement struct {
	Servers, Clients string
}

// String says where the processes ran, for reports.
func (p Placement) String() string {
	where := func(cpus string) string {
		if cpus == "" {
			return "any CPU"
		}
		if _, err := strconv.Atoi(cpus); err == nil {
			return "CPU " + cpus
		}
		return "CPUs " + cpus
	}
	return fmt.Sprintf("servers on %s, client processes on %s", where(p.Servers), where(p.Clients))
}

// placementOf is where double (when not nil), servers and cl's processes
// may run, as /proc says.
func placementOf(double *process, servers []*process, cl *clients) Placement {
	var serverPIDs, clientPIDs []int
	if double != nil {
		serverPIDs = append(serverPIDs, double.cmd.Process.Pid)
	}
	for _, p := range servers {
		serverPIDs = append(serverPIDs, p.cmd.Process.Pid)
	}
	for _, cmd := range cl.cmds {
		clientPIDs = append(clientPIDs, cmd.Process.Pid)
	}
	return Placement{Servers: allowedCPUsOf(serverPIDs), Clients: allowedCPUsOf(clientPIDs)}
}

// allowedCPUsOf is the CPU lists processes pids may run on (their
// Cpus_allowed_list in /proc; distinct lists joined by "; "), empty where
// /proc cannot tell.
func allowedCPUsOf(pids []int) string {
	var lists []string
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				if list = strings.TrimSpace(list); !slices.Contains(lists, list) {
					lists = append(lists, list)
				}
			}
		}
	}
	return strings.Join(lists, "; ")
}

// check refuses a list that names no CPU this process may run on, and a
// placement without taskset to apply it.
func (p Placement) check() error {
	if p.Servers == "" && p.Clients == "" {
		return nil
	}
	allowed, err := allowedCPUs()
	if err != nil {
		return err
	}
	for _, l := range []struct{ name, cpus string }{{"server CPUs", p.Servers}, {"client CPUs", p.Clients}} {
		if l.cpus == "" {
			continue
		}
		cpus, err := parseCPUList(l.cpus)
		if err != nil {
			return fmt.Errorf("loadtest: %s %q: %w", l.name, l.cpus, err)
		}
		for _, c := range cpus {
			if !slices.Contains(allowed, c) {
				return fmt.Errorf("loadtest: %s %q: CPU %d is not one this machine lets us use (%d are)", l.name, l.cpus, c, len(allowed))
			}
		}
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("loadtest: placing processes on CPUs needs taskset (Debian's util-linux): %w", err)
	}
	return nil
}

// parseCPUList reads a CPU list: numbers and ranges a-b, comma-separated.
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpuNumber(lo)
		b := a
		if err == nil && isRange {
			b, err = cpuNumber(hi)
		}
		if err != nil || b < a {
			return nil, errors.New("want CPU numbers and ranges such as 0,2-3")
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// maxCPU bounds CPU numbers: the size of Linux's default CPU set.
const maxCPU = 1024

// cpuNumber is s, decimal digits naming a CPU below maxCPU.
func cpuNumber(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a CPU number")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n >= maxCPU {
		return 0, errors.New("not a CPU number")
	}
	return n, nil
}

// placedCommand is exec.CommandContext(ctx, binary, args...) run on cpus
// (all CPUs when empty). taskset sets its CPUs and then execs the binary
// in the same process, so the command's PID is the binary's, whose CPU
// time the scenario reads, and every thread the binary starts inherits
// the CPUs.
func placedCommand(ctx context.Context, cpus, binary string, args ...string) *exec.Cmd {
	if cpus == "" {
		return exec.CommandContext(ctx, binary, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"--cpu-list", cpus, binary}, args...)...)
}
