package controlplane

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

// Process is one child process (etcd, kube-apiserver, a scheduler, ...) whose
// stdout and stderr go to its own log file.
//
// Children are started in their own process group and with Pdeathsig
// SIGKILL. The kernel ties Pdeathsig to the OS thread that forked the child:
// a caller that may end the forking thread (a goroutine that exits while
// locked with runtime.LockOSThread) would kill the child with it. Commands
// keep the goroutine that starts children on the main thread
// (runtime.LockOSThread in main); tests need nothing special.
type Process struct {
	// Name names the process in logs and errors.
	Name string
	// LogPath is the file that holds the process's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // result of Wait; read only after done is closed
}

// StartProcess starts binary with args, stdout and stderr going to
// <dir>/<name>.log. It does not wait for the process to be ready.
func StartProcess(name, binary string, args []string, dir string) (*Process, error) {
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
		// Own process group: a Ctrl-C on the terminal reaches only the
		// parent, which then stops the children in order (scheduler before
		// the apiserver before etcd) instead of all dying at once.
		Setpgid: true,
		// If the parent itself is killed (SIGKILL, OOM) the kernel kills the
		// child too, so no control plane is left orphaned.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	klog.V(1).InfoS("Started", "process", name, "pid", cmd.Process.Pid, "log", logPath)
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited returns a non-nil *ProcessError if the process is no longer running.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return &ProcessError{Process: p, Err: errors.New("exited unexpectedly with status 0")}
		}
		return &ProcessError{Process: p, Err: fmt.Errorf("exited unexpectedly: %w", p.err)}
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group and SIGKILL after grace, then waits
// for the process to exit. The group, not just the pid, so that anything the
// child started goes too. Stopping a stopped process does nothing.
func (p *Process) Stop(grace time.Duration) {
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
	klog.InfoS("Did not stop in time, killing", "process", p.Name, "grace", grace)
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-p.done
}

// Kill sends SIGKILL to the process group at once, as an OOM kill or a node
// failure would end the process (no shutdown code runs, nothing is
// released), and waits for it to exit. Killing a stopped process does
// nothing.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// ProcessError attributes a failure to one process, so that the caller can
// show that process's log.
type ProcessError struct {
	Process *Process
	Err     error
}

func (e *ProcessError) Error() string { return e.Process.Name + ": " + e.Err.Error() }
func (e *ProcessError) Unwrap() error { return e.Err }

// Blame wraps err, if not nil and not attributed to a process already, as a
// failure of p.
func Blame(p *Process, err error) error {
	if err == nil {
		return nil
	}
	var pe *ProcessError
	if errors.As(err, &pe) {
		return err
	}
	return &ProcessError{Process: p, Err: err}
}

// Tail returns the last n lines of the file at path (or a note saying why it
// cannot be read).
func Tail(path string, n int) string {
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
