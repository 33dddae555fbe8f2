package registrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pgBinDir is the directory of PostgreSQL's server programs (initdb,
// postgres): the one of $PATH's initdb, else the newest of Debian's
// /usr/lib/postgresql/VERSION/bin, which Debian does not put on PATH.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if isProgram(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, dir := range dirs {
		if isProgram(filepath.Join(dir, "initdb")) && isProgram(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errors.New("PostgreSQL's server programs (initdb, postgres) are neither on PATH nor in /usr/lib/postgresql/*/bin: install them (Debian: apt-get install postgresql)")
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// postgres is a PostgreSQL server of its own data directory, listening
// only on a Unix socket in dir (no TCP port to find or to lose to another
// process).
type postgres struct {
	dir  string // owned by the server's user; holds data/ and the socket
	cmd  *exec.Cmd
	done chan struct{} // closed when the server has exited
	err  error         // its exit status, once done
}

// startPostgres makes a database cluster in dir with initdb and starts a
// server on it, writing both programs' output to logFile; it returns once
// the server accepts connections. dir must be empty, and (when the tests
// run as root) reachable by the user PostgreSQL runs as.
func startPostgres(ctx context.Context, dir string, logFile *os.File) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	as, err := postgresUser()
	if err != nil {
		return nil, err
	}
	if err := chown(dir, as); err != nil {
		return nil, fmt.Errorf("giving %s to PostgreSQL's user: %w", dir, err)
	}
	data := filepath.Join(dir, "data")
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=" + dir}
	// Authentication: trust, as only the socket in dir is served.
	// --no-sync: the cluster lives as long as the test.
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir, initdb.Env = dir, env
	initdb.Stdout, initdb.Stderr = logFile, logFile
	if err := spawn(initdb, syscall.SIGKILL, as); err != nil {
		return nil, fmt.Errorf("initdb: %w", err)
	}
	if err := initdb.Wait(); err != nil {
		return nil, fmt.Errorf("initdb: %v (its output is in %s)", err, logFile.Name())
	}
	// Durability is of no use to a test: fsync, synchronous commits and
	// full page writes off make publishing fast.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=100", "-c", "shared_buffers=32MB")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// SIGQUIT is PostgreSQL's immediate shutdown: the server and its
	// backends exit at once.
	if err := spawn(cmd, syscall.SIGQUIT, as); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pg := &postgres{dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { pg.err = cmd.Wait(); close(pg.done) }()
	if err := pg.waitReady(ctx, data); err != nil {
		pg.stop()
		return nil, fmt.Errorf("%w (PostgreSQL's output is in %s)", err, logFile.Name())
	}
	return pg, nil
}

// waitReady waits until the server says, in postmaster.pid, that it
// accepts connections.
func (pg *postgres) waitReady(ctx context.Context, data string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(filepath.Join(data, "postmaster.pid")); err == nil {
			// The eighth line is the server's status.
			lines := bytes.Split(b, []byte("\n"))
			if len(lines) >= 8 && strings.TrimSpace(string(lines[7])) == "ready" {
				return nil
			}
		}
		select {
		case <-pg.done:
			return fmt.Errorf("postgres exited before accepting connections: %v", pg.err)
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// url is the database URL of the server's database postgres, through its
// socket.
func (pg *postgres) url() string {
	return "postgres:///postgres?host=" + pg.dir + "&user=postgres&sslmode=disable"
}

// stop shuts the server down at once and waits for it.
func (pg *postgres) stop() {
	signalGroup(pg.cmd, syscall.SIGQUIT)
	select {
	case <-pg.done:
	case <-time.After(30 * time.Second):
		signalGroup(pg.cmd, syscall.SIGKILL)
		<-pg.done
	}
}
