package loadtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for list, want := range map[string][]int{"0": {0}, "1-3": {1, 2, 3}, "0,2-3": {0, 2, 3}, "5,1": {5, 1}} {
		if got, err := parseCPUList(list); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", list, got, err, want)
		}
	}
	for _, list := range []string{"", "a", "1-", "-1", "3-1", "0,,1", "1 ", "0-2000", "1.5", "+1", "1-+2", "1024"} {
		if got, err := parseCPUList(list); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", list, got)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-1", "0,2-3", "3-1", "", "1,", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := parseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("%q: no CPU and no error", s)
		}
		for _, c := range cpus {
			if c < 0 || c >= maxCPU {
				t.Fatalf("%q: CPU %d", s, c)
			}
		}
	})
}

// allowedCPUsOfTest are the CPUs this test may run on.
func allowedCPUsOfTest(t *testing.T) []int {
	t.Helper()
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("allowed CPUs %v: %v", cpus, err)
	}
	return cpus
}

func TestPlacementCheck(t *testing.T) {
	cpus := allowedCPUsOfTest(t)
	last := strconv.Itoa(cpus[len(cpus)-1])
	// Given lists of CPUs this process may use, or none, the placement stands
	for _, p := range []Placement{{}, {Servers: last}, {Clients: last}, {Servers: strconv.Itoa(cpus[0]), Clients: last}} {
		if err := p.check(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	// Given a malformed list, or a CPU beyond the machine's, it is refused
	// with the list named
	for _, p := range []Placement{{Servers: "zero"}, {Clients: "1-"}, {Servers: "1023"}} {
		err := p.check()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", p.Servers+p.Clients)) {
			t.Errorf("%+v: got %v, want an error naming the list", p, err)
		}
	}
}

func TestPlacedCommandRunsTheBinaryInItsOwnProcessOnTheCPUs(t *testing.T) {
	cpu := strconv.Itoa(allowedCPUsOfTest(t)[0])
	// Given a command placed on one CPU
	cmd := placedCommand(context.Background(), cpu, "/bin/sh", "-c", `echo $$; grep Cpus_allowed_list /proc/self/status`)
	// When it runs
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// Then the binary had the PID the caller started, whose CPU time the
	// scenario reads, and only that CPU
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(cmd.Process.Pid) || strings.TrimSpace(strings.TrimPrefix(lines[1], "Cpus_allowed_list:")) != cpu {
		t.Errorf("output %q, want PID %d and CPU %s", out, cmd.Process.Pid, cpu)
	}
	// And without CPUs the binary runs as it is
	if cmd := placedCommand(context.Background(), "", "/bin/true"); cmd.Path != "/bin/true" {
		t.Errorf("unplaced command runs %s", cmd.Path)
	}
}

func TestPlacementString(t *testing.T) {
	for p, want := range map[Placement]string{
		{}:                           "servers on any CPU, client processes on any CPU",
		{Servers: "0", Clients: "1"}: "servers on CPU 0, client processes on CPU 1",
		{Servers: "0-1"}:             "servers on CPUs 0-1, client processes on any CPU",
	} {
		if got := p.String(); got != want {
			t.Errorf("%+v: %q, want %q", p, got, want)
		}
	}
}
