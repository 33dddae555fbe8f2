package registrytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// debianPgBin is where Debian's packages put PostgreSQL's server programs.
var debianPgBin = "/usr/lib/postgresql/*/bin"

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
	dirs, _ := filepath.Glob(debianPgBin)
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
	// A copy of a cluster made once (initdb takes seconds on a loaded
	// machine, a copy a fraction of that); initdb here when there is no
	// cache to keep it in.
	if tmpl, err := pgTemplate(ctx, bin, as, logFile); err == nil {
		if err := copyTree(tmpl, data, as); err != nil {
			return nil, fmt.Errorf("copying the database cluster %s: %w", tmpl, err)
		}
	} else {
		fmt.Fprintf(logFile, "registrytest: no cached database cluster (%v): initdb\n", err)
		if err := initdb(ctx, bin, data, as, logFile); err != nil {
			return nil, err
		}
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

// initdb makes a database cluster in data, which must not exist, as the
// user as.
func initdb(ctx context.Context, bin, data string, as *runAs, logFile *os.File) error {
	// Authentication: trust, as the server serves only a socket in a
	// directory of its own. --no-sync: the cluster lives as long as a test.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Dir = filepath.Dir(data)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "HOME=" + filepath.Dir(data)}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := spawn(cmd, syscall.SIGKILL, as); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("initdb: %v (its output is in %s)", err, logFile.Name())
	}
	return nil
}

var template struct {
	sync.Mutex
	dir string
}

// pgTemplate returns a fresh database cluster of the PostgreSQL of bin,
// made once by initdb and kept in the user's cache directory (a directory
// per PostgreSQL installation), to be copied, never used in place.
func pgTemplate(ctx context.Context, bin string, as *runAs, logFile *os.File) (string, error) {
	template.Lock()
	defer template.Unlock()
	if template.dir != "" {
		return template.dir, nil
	}
	h := sha256.New()
	for _, p := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(bin, p))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", filepath.Join(bin, p), fi.Size(), fi.ModTime().UnixNano())
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(base, "etdi-registrytest", "pgdata-"+hex.EncodeToString(h.Sum(nil)[:12]))
	data := filepath.Join(cache, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		template.dir = data
		return data, nil
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return "", err
	}
	// initdb as PostgreSQL's user in a directory it can reach, copy the
	// result beside the cache's place and rename it there: test binaries
	// of several packages may make it at once.
	work, err := os.MkdirTemp("", fmt.Sprintf("etdi-registrytest-%d-initdb-", os.Getpid()))
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := chown(work, as); err != nil {
		return "", err
	}
	if err := initdb(ctx, bin, filepath.Join(work, "data"), as, logFile); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(cache), filepath.Base(cache)+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(filepath.Join(work, "data"), filepath.Join(tmp, "data"), nil); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, cache); err != nil {
		if _, serr := os.Stat(filepath.Join(data, "PG_VERSION")); serr != nil {
			return "", err
		}
	}
	template.dir = data
	return data, nil
}

// copyTree copies the directory src to dst, which must not exist, with
// the same modes, owned by the user as (the current user when nil).
func copyTree(src, dst string, as *runAs) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
			// Mkdir's mode is masked by the umask; PostgreSQL wants 0700.
			if err := os.Chmod(to, info.Mode().Perm()); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			return lchown(to, as)
		case d.Type().IsRegular():
			if err := copyFile(path, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or symbolic link", path)
		}
		return chown(to, as)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
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
