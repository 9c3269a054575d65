// Package chtest runs a real ClickHouse server for tests: the local
// clickhouse-server binary started on a free loopback port with its own
// temporary directory and configuration, never the system service.
//
// A package's tests share one server (see Main and Shared); a test that
// needs to stop and restart a server starts its own with Start.
// TVSM_CLICKHOUSE_URL points the shared tests at an existing server instead
// (for example a current ClickHouse release).
package chtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// How long a server may take to answer after its start, and to exit after
// SIGTERM before it is killed.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// Server is a clickhouse-server process owned by the test binary.
type Server struct {
	// Addr is the native protocol address, 127.0.0.1:port.
	Addr string

	dir     string
	command []string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd.Wait's result, set before exited closes
}

// ErrNoBinary reports that no ClickHouse server binary was found.
var ErrNoBinary = errors.New("chtest: no ClickHouse server binary (clickhouse-server or clickhouse) found " +
	"on PATH or in /usr/sbin, /usr/bin; install Debian's clickhouse-server (.ci/run does) or set " +
	URLEnv + " to an existing server")

// Start starts a server in a new temporary directory on a free loopback
// port and waits until it answers a ping. On failure the server's log is in
// the error.
func Start() (*Server, error) {
	command, err := findBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chtest-")
	if err != nil {
		return nil, fmt.Errorf("chtest: %w", err)
	}
	s := &Server{dir: dir, command: command}
	// A free port found by listening can be taken again before the server
	// binds it; try a few.
	for range 3 {
		if err = s.startOnFreePort(); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

func (s *Server) startOnFreePort() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", port)
	if err := writeConfig(s.dir, port); err != nil {
		return err
	}
	return s.start()
}

// start runs the server on the configured port and data and waits until it
// answers.
func (s *Server) start() error {
	logFile, err := os.Create(filepath.Join(s.dir, "stdout.log"))
	if err != nil {
		return fmt.Errorf("chtest: %w", err)
	}
	defer logFile.Close()
	args := append(s.command[1:], "--config-file="+filepath.Join(s.dir, "config.xml"))
	cmd := exec.Command(s.command[0], args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chtest: start %s: %w", s.command[0], err)
	}
	s.cmd, s.exited, s.waitErr = cmd, make(chan struct{}), nil
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		s.kill()
		return fmt.Errorf("chtest: server at %s not ready: %w\n%s", s.Addr, err, s.Log())
	}
	return nil
}

// waitReady pings the server until it answers, it exits, or startTimeout.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(s.Addr)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("server exited: %v", s.waitErr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %s: %w", startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ping(addr string) error {
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return conn.Ping(ctx)
}

// Stop stops the server (SIGTERM, then SIGKILL after stopTimeout) and keeps
// its port and data for Restart.
func (s *Server) Stop() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
		s.kill()
		return fmt.Errorf("chtest: server at %s ignored SIGTERM for %s; killed", s.Addr, stopTimeout)
	}
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Kill kills the server (SIGKILL, a crash: no flush, no goodbye to its
// clients) and keeps its port and data for Restart.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.kill()
	s.cmd = nil
}

// Restart starts a stopped server again on the same port and data.
func (s *Server) Restart() error {
	if s.cmd != nil {
		return errors.New("chtest: restart of a running server")
	}
	return s.start()
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

// URL returns the clickhouse:// URL of database db on the server.
func (s *Server) URL(db string) string { return "clickhouse://" + s.Addr + "/" + db }

// Log returns the server's console output and log files, for failure
// messages.
func (s *Server) Log() string {
	var b bytes.Buffer
	for _, name := range []string{"stdout.log", "server.err.log", "server.log"} {
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		const keep = 8 << 10 // the end of a log says why it stopped
		if len(data) > keep {
			data = data[len(data)-keep:]
		}
		fmt.Fprintf(&b, "--- %s (end) ---\n%s\n", name, bytes.TrimSpace(data))
	}
	return b.String()
}

// findBinary returns the command that starts a server: Debian's
// clickhouse-server, or the single clickhouse binary of current releases.
func findBinary() ([]string, error) {
	candidates := [][]string{
		{"clickhouse-server"}, {"/usr/sbin/clickhouse-server"},
		{"clickhouse", "server"}, {"/usr/bin/clickhouse", "server"},
	}
	for _, c := range candidates {
		if path, err := exec.LookPath(c[0]); err == nil {
			return append([]string{path}, c[1:]...), nil
		}
	}
	return nil, ErrNoBinary
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("chtest: find a free port: %w", err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, nil
}

// writeConfig writes config.xml and users.xml for a server listening on
// 127.0.0.1:port (native protocol only) with everything under dir.
func writeConfig(dir, port string) error {
	r := strings.NewReplacer("{dir}", dir, "{port}", port)
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(r.Replace(configXML)), 0o644); err != nil {
		return fmt.Errorf("chtest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(usersXML), 0o644); err != nil {
		return fmt.Errorf("chtest: %w", err)
	}
	return nil
}

// The root element <yandex> is what 18.16 reads; current releases accept it
// as well as <clickhouse>. No http_port and no interserver port: only the
// native protocol listens.
const configXML = `<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>{dir}/server.log</log>
        <errorlog>{dir}/server.err.log</errorlog>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{port}</tcp_port>
    <path>{dir}/data/</path>
    <tmp_path>{dir}/tmp/</tmp_path>
    <user_files_path>{dir}/user_files/</user_files_path>
    <format_schema_path>{dir}/format_schemas/</format_schema_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
    <!-- Stop fast: a test server has no query worth waiting for. -->
    <shutdown_wait_unfinished>1</shutdown_wait_unfinished>
</yandex>
`

const usersXML = `<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <!-- Idle connections notice a shutdown within poll_interval
                 seconds (default 10): keeps Stop quick. -->
            <poll_interval>1</poll_interval>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default></default></quotas>
</yandex>
`

// Dir is the server's directory: its configuration, log and data.
func (s *Server) Dir() string { return s.dir }
