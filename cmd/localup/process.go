package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// process is one child of the local run (etcd, kube-apiserver, scheduler),
// logging to its own file in the run directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed once the process has exited
	err     error         // result of Wait; read only after done is closed
}

// startProcess starts binary with args, stdout and stderr going to
// <dir>/<name>.log.
func startProcess(name, binary string, args []string, dir string) (*process, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s: %w (run `make tools build` first)", name, err)
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C on the terminal reaches only localup,
		// which then stops the children in order (scheduler before the
		// apiserver before etcd) instead of all dying at once.
		Setpgid: true,
		// If localup itself is killed (SIGKILL, OOM) the kernel kills the
		// child too, so no control plane is left orphaned.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	klog.V(1).InfoS("Started", "process", name, "pid", cmd.Process.Pid, "log", logPath)
	return p, nil
}

// exited returns a non-nil error if the process is no longer running.
func (p *process) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return &processError{p: p, err: errors.New("exited unexpectedly with status 0")}
		}
		return &processError{p: p, err: fmt.Errorf("exited unexpectedly: %w", p.err)}
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group and SIGKILL after grace. The group,
// not just the pid, so that anything the child started goes too.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	klog.InfoS("Did not stop in time, killing", "process", p.name, "grace", grace)
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-p.done
}

// processError attributes a failure to one process, so that main can show
// that process's log.
type processError struct {
	p   *process
	err error
}

func (e *processError) Error() string { return e.p.name + ": " + e.err.Error() }
func (e *processError) Unwrap() error { return e.err }

// blame wraps err, if not nil, as a failure of p.
func blame(p *process, err error) error {
	if err == nil {
		return nil
	}
	var pe *processError
	if errors.As(err, &pe) {
		return err
	}
	return &processError{p: p, err: err}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	lines := make([]string, 0, n)
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		if len(lines) == n {
			lines = lines[1:]
		}
		lines = append(lines, s.Text())
	}
	return strings.Join(lines, "\n")
}
