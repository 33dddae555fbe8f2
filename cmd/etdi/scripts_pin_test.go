package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/etcdtest"
	"github.com/etdi-dev/etdi/pin/lockfile"
	"github.com/etdi-dev/etdi/strictjson"
	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The fixtures of the scripts about the pin store, its history, its
// lockfiles and revocations (pin_, audit_, lock_, revoke_, approve_,
// etcd_).
//
// Environment: $AUDIT_PASSWORD, a password for the audit key, not set as
// ETDI_AUDIT_PASSWORD unless a script sets it.
//
// Commands reading the standard output of the last command:
//
//	pin-kinds KINDS            the error findings of check --json (one
//	                           server) are exactly KINDS, comma-separated in
//	                           order (an item's kind as kind:item); - for none
//	pin-kinds -has KIND...     the error findings include each KIND
//	pin-json [-r] PATH VALUE   the JSON value at PATH is VALUE (with -r:
//	                           matches the regexp VALUE); PATH is keys and
//	                           array indices joined by dots, a last # is the
//	                           length of an array or object (quote it: a bare
//	                           # starts a comment: 'pins.#'); a string
//	                           compares as its text, any other value as its
//	                           compact JSON; ! pin-json: another value or none
//	pin-json -since VAR PATH   the time at PATH is not before the time in
//	                           $VAR (set by pin-now) nor a minute after now
//	pin-json -set VAR PATH     sets VAR to the value at PATH
//	pin-capture VAR REGEXP     sets VAR to the first submatch of REGEXP
//	pin-now VAR                sets VAR to the current time, one second back
//	pin-setenv VAR TEXT        sets VAR to TEXT with Go's escapes read, as
//	                           in a Go string (for control characters:
//	                           bad\x1b[2Jtool)
//	pin-repeat VAR TEXT N      sets VAR to N times TEXT
//	pin-upper VAR              upper-cases $VAR
//	pin-records TYPE MACHINE N the history (pin history --json) holds N
//	                           records of TYPE written by MACHINE; N is a
//	                           number or + for at least one
//
// Commands on files:
//
//	pin-edit IN OUT OLD NEW    writes IN to OUT with the first OLD replaced
//	                           by NEW (both read with Go's escapes: \n);
//	                           fails if IN has no OLD
//	pin-bolt-set DB BUCKET KEY FIELD VALUE  sets FIELD of the JSON object
//	                           stored at KEY to the string VALUE, as someone
//	                           with write access to the file would
//	pin-bolt-replace DB BUCKET KEY OLD NEW  replaces OLD by NEW once in the
//	                           value at KEY
//	pin-bolt-del DB BUCKET KEY deletes KEY
//	                           (BUCKET is a path of nested buckets joined by
//	                           /; KEY is text, a Go-quoted string, or #N for
//	                           the big-endian uint64 N)
//	pin-leaf DB EXPORT         line 1 of EXPORT (audit export --json) hashes
//	                           to the leaf hash DB stores for record 0
//	pin-holdlock DB            opens DB with bbolt and holds its lock until
//	                           pin-release DB or the end of the script
//	pin-release DB
//	pin-truncate FILE NUM DEN  keeps the first NUM/DEN of FILE
//	pin-garbage FILE           writes 32 KiB that are no database to FILE
//	pin-snapshot NAME          remembers the content of every file in $WORK
//	                           but $WORK/.tmp ($TMPDIR)
//	pin-unchanged NAME [FILE...] no file of $WORK but the ones named was
//	                           created, changed or removed since pin-snapshot
//	                           NAME; ! pin-unchanged: something was
//	pin-emptydir DIR           DIR has no entries
//	pin-lock-reverse IN OUT    writes the lockfile IN with the members of its
//	                           top object in reverse order, tab-indented
//	pin-lock-tamper WHAT IN OUT  writes the signed lockfile IN with WHAT
//	                           changed and its signature kept: def (the first
//	                           pin's definition and digest) or added (a
//	                           revocation)
//	pin-lock-generation VAR FILE  sets VAR to the lockfile's generation
//	pin-lock-generation -gt VAR FILE  the lockfile's generation is higher
//	                           than $VAR
//	pin-lock-expires FILE MIN MAX  the lockfile expires between MIN and MAX
//	                           (Go durations) from now
//	pin-notekey NAME           writes the note key pair NAME.skey and
//	                           NAME.pub named etdi-audit
//	pin-lock-resign IN OUT SKEY GEN EXPIRES  writes IN with generation GEN
//	                           and expiry EXPIRES (a duration from now,
//	                           whole seconds) signed with SKEY
//
// Servers:
//
//	pin-etcd VAR               sets VAR to the URL of a pin store of the
//	                           script's own (etcd://127.0.0.1:PORT/PREFIX):
//	                           a key prefix of its own in the one-member etcd
//	                           that the scripts of a test run share
//	pin-idp VAR                starts testdata/idp's OIDC provider for the
//	                           script and sets VAR to its issuer URL
func init() {
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		env.Setenv("AUDIT_PASSWORD", "audit-"+testPassword)
		return nil
	})
	for name, cmd := range map[string]scriptCmd{
		"pin-kinds":           pinKinds,
		"pin-json":            pinJSON,
		"pin-capture":         pinCapture,
		"pin-now":             pinNow,
		"pin-setenv":          pinSetenv,
		"pin-repeat":          pinRepeat,
		"pin-upper":           pinUpper,
		"pin-edit":            pinEdit,
		"pin-bolt-set":        pinBoltSet,
		"pin-bolt-replace":    pinBoltReplace,
		"pin-bolt-del":        pinBoltDel,
		"pin-leaf":            pinLeaf,
		"pin-holdlock":        pinHoldLock,
		"pin-release":         pinRelease,
		"pin-truncate":        pinTruncate,
		"pin-garbage":         pinGarbage,
		"pin-snapshot":        pinSnapshot,
		"pin-unchanged":       pinUnchanged,
		"pin-emptydir":        pinEmptyDir,
		"pin-lock-reverse":    pinLockReverse,
		"pin-lock-tamper":     pinLockTamper,
		"pin-lock-generation": pinLockGeneration,
		"pin-lock-expires":    pinLockExpires,
		"pin-notekey":         pinNoteKey,
		"pin-lock-resign":     pinLockResign,
		"pin-idp":             pinIDP,
		"pin-etcd":            pinEtcd,
		"pin-records":         pinRecords,
	} {
		scriptCmds[name] = cmd
	}
}

func pinUsage(ts *testscript.TestScript, neg bool, args []string, n int, usage string) {
	if neg || len(args) != n {
		ts.Fatalf("usage: %s", usage)
	}
}

func pinKinds(ts *testscript.TestScript, neg bool, args []string) {
	has := len(args) > 1 && args[0] == "-has"
	if neg || len(args) < 1 || len(args) > 1 && !has {
		ts.Fatalf("usage: pin-kinds KINDS | pin-kinds -has KIND...")
	}
	var co checkOutput
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &co); err != nil || len(co.Servers) != 1 {
		ts.Fatalf("check --json of one server: %v", err)
	}
	var k []string
	for _, f := range co.Servers[0].Findings {
		if f.Severity == "error" {
			if f.Item != "" {
				k = append(k, string(f.Kind)+":"+f.Item)
				continue
			}
			k = append(k, string(f.Kind))
		}
	}
	if has {
		for _, want := range args[1:] {
			if !slices.Contains(k, want) {
				ts.Fatalf("error findings %s lack %s", strings.Join(k, ","), want)
			}
		}
		return
	}
	got := strings.Join(k, ",")
	if got == "" {
		got = "-"
	}
	if got != args[0] {
		ts.Fatalf("error findings %s, want %s", got, args[0])
	}
}

// jsonAt returns the value at path in v, as pin-json compares it.
func jsonAt(v any, path string) (string, bool) {
	if path != "" && path != "." {
		for _, part := range strings.Split(path, ".") {
			if part == "#" {
				switch x := v.(type) {
				case []any:
					return strconv.Itoa(len(x)), true
				case map[string]any:
					return strconv.Itoa(len(x)), true
				}
				return "", false
			}
			switch x := v.(type) {
			case map[string]any:
				var ok bool
				if v, ok = x[part]; !ok {
					return "", false
				}
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(x) {
					return "", false
				}
				v = x[i]
			default:
				return "", false
			}
		}
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

func pinJSON(ts *testscript.TestScript, neg bool, args []string) {
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("stdout is not JSON: %v", err)
	}
	if len(args) == 3 && args[0] == "-since" {
		if neg {
			ts.Fatalf("unsupported: ! pin-json -since")
		}
		got, ok := jsonAt(v, args[2])
		at, err := time.Parse(time.RFC3339Nano, got)
		if !ok || err != nil {
			ts.Fatalf("%s: %q is no time", args[2], got)
		}
		since, err := time.Parse(time.RFC3339Nano, ts.Getenv(args[1]))
		ts.Check(err)
		if at.Before(since) || at.After(time.Now().Add(time.Minute)) {
			ts.Fatalf("%s: %s is not between $%s (%s) and now", args[2], at, args[1], since)
		}
		return
	}
	if len(args) == 3 && args[0] == "-set" {
		got, ok := jsonAt(v, args[2])
		if neg || !ok {
			ts.Fatalf("%s: no such value", args[2])
		}
		ts.Setenv(args[1], got)
		return
	}
	re := len(args) == 3 && args[0] == "-r"
	if re {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: pin-json [-r] PATH VALUE | pin-json -since VAR PATH | pin-json -set VAR PATH")
	}
	got, ok := jsonAt(v, args[0])
	match := ok && got == args[1]
	if re {
		match = ok && regexp.MustCompile(args[1]).MatchString(got)
	}
	if match == neg {
		if !ok {
			ts.Fatalf("%s: no such value, want %q", args[0], args[1])
		}
		ts.Fatalf("%s is %q, want %s%q", args[0], got, map[bool]string{true: "not "}[neg], args[1])
	}
}

func pinCapture(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 2, "pin-capture VAR REGEXP")
	m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("stdout does not match %s", args[1])
	}
	ts.Setenv(args[0], m[1])
}

func pinNow(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-now VAR")
	ts.Setenv(args[0], time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
}

// boltKey reads a key argument: #N, a Go-quoted string, or text.
func boltKey(ts *testscript.TestScript, s string) []byte {
	if n, ok := strings.CutPrefix(s, "#"); ok {
		i, err := strconv.ParseUint(n, 10, 64)
		ts.Check(err)
		return be(i)
	}
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		ts.Check(err)
		return []byte(u)
	}
	return []byte(s)
}

// boltUpdate runs fn on the bucket at path of the database file db.
func boltUpdate(ts *testscript.TestScript, db, path string, fn func(b *bolt.Bucket) error) {
	d, err := bolt.Open(ts.MkAbs(db), 0o600, &bolt.Options{Timeout: time.Minute})
	ts.Check(err)
	defer d.Close()
	ts.Check(d.Update(func(tx *bolt.Tx) error {
		var b *bolt.Bucket
		for i, name := range strings.Split(path, "/") {
			if i == 0 {
				b = tx.Bucket([]byte(name))
			} else if b != nil {
				b = b.Bucket([]byte(name))
			}
		}
		if b == nil {
			return fmt.Errorf("no bucket %s", path)
		}
		return fn(b)
	}))
}

func pinBoltSet(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 5, "pin-bolt-set DB BUCKET KEY FIELD VALUE")
	boltUpdate(ts, args[0], args[1], func(b *bolt.Bucket) error {
		k := boltKey(ts, args[2])
		var obj map[string]any
		if err := json.Unmarshal(b.Get(k), &obj); err != nil {
			return fmt.Errorf("key %q: %v", k, err)
		}
		obj[args[3]] = args[4]
		v, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return b.Put(k, v)
	})
}

func pinBoltReplace(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 5, "pin-bolt-replace DB BUCKET KEY OLD NEW")
	boltUpdate(ts, args[0], args[1], func(b *bolt.Bucket) error {
		k := boltKey(ts, args[2])
		v := b.Get(k)
		if !bytes.Contains(v, []byte(args[3])) {
			return fmt.Errorf("key %q holds no %q", k, args[3])
		}
		return b.Put(k, bytes.Replace(v, []byte(args[3]), []byte(args[4]), 1))
	})
}

func pinBoltDel(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-bolt-del DB BUCKET KEY")
	boltUpdate(ts, args[0], args[1], func(b *bolt.Bucket) error {
		k := boltKey(ts, args[2])
		if b.Get(k) == nil {
			return fmt.Errorf("no key %q", k)
		}
		return b.Delete(k)
	})
}

func pinLeaf(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 2, "pin-leaf DB EXPORT")
	line, _, _ := strings.Cut(ts.ReadFile(args[1]), "\n")
	leaf := sha256.Sum256(append([]byte{0}, line...))
	d, err := bolt.Open(ts.MkAbs(args[0]), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Minute})
	ts.Check(err)
	defer d.Close()
	var stored []byte
	ts.Check(d.View(func(tx *bolt.Tx) error {
		stored = bytes.Clone(tx.Bucket([]byte("log")).Bucket([]byte("hashes")).Get(be(uint64(tlog.StoredHashIndex(0, 0)))))
		return nil
	}))
	if !bytes.Equal(stored, leaf[:]) {
		ts.Fatalf("record 0 hashes to %s, the database stores %s", base64.StdEncoding.EncodeToString(leaf[:]), base64.StdEncoding.EncodeToString(stored))
	}
}

// heldLocks are the databases pin-holdlock holds open, by absolute path.
var heldLocks sync.Map

func pinHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-holdlock DB")
	path := ts.MkAbs(args[0])
	d, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Minute})
	ts.Check(err)
	heldLocks.Store(path, d)
	ts.Defer(func() {
		if d, ok := heldLocks.LoadAndDelete(path); ok {
			d.(*bolt.DB).Close()
		}
	})
}

func pinRelease(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-release DB")
	d, ok := heldLocks.LoadAndDelete(ts.MkAbs(args[0]))
	if !ok {
		ts.Fatalf("%s is not held", args[0])
	}
	ts.Check(d.(*bolt.DB).Close())
}

func pinTruncate(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-truncate FILE NUM DEN")
	num, err1 := strconv.Atoi(args[1])
	den, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || den <= 0 {
		ts.Fatalf("pin-truncate: NUM and DEN are numbers")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	ts.Check(os.WriteFile(path, b[:len(b)*num/den], 0o600))
}

func pinGarbage(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-garbage FILE")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), bytes.Repeat([]byte("garbage!"), 4096), 0o600))
}

// snapshots are the pin-snapshot contents, by script work directory and
// name.
var snapshots sync.Map

func workFiles(ts *testscript.TestScript) map[string]string {
	work := ts.Getenv("WORK")
	out := map[string]string{}
	ts.Check(filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join(work, ".tmp") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			rel, _ := filepath.Rel(work, path)
			out[rel] = string(sum[:])
		}
		return nil
	}))
	return out
}

func pinSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-snapshot NAME")
	snapshots.Store(ts.Getenv("WORK")+"\x00"+args[0], workFiles(ts))
}

func pinUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: pin-unchanged NAME [FILE...]")
	}
	v, ok := snapshots.Load(ts.Getenv("WORK") + "\x00" + args[0])
	if !ok {
		ts.Fatalf("no snapshot %s", args[0])
	}
	before, after := v.(map[string]string), workFiles(ts)
	var changes []string
	for path, sum := range after {
		if slices.Contains(args[1:], path) {
			continue
		}
		if b, ok := before[path]; !ok {
			changes = append(changes, path+" was created")
		} else if b != sum {
			changes = append(changes, path+" was changed")
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok && !slices.Contains(args[1:], path) {
			changes = append(changes, path+" was removed")
		}
	}
	slices.Sort(changes)
	if neg && len(changes) == 0 {
		ts.Fatalf("nothing changed since snapshot %s", args[0])
	}
	if !neg && len(changes) > 0 {
		ts.Fatalf("since snapshot %s: %s", args[0], strings.Join(changes, ", "))
	}
}

func pinEmptyDir(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-emptydir DIR")
	entries, err := os.ReadDir(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		ts.Fatalf("%s holds %s", args[0], strings.Join(names, ", "))
	}
}

func pinLockReverse(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 2, "pin-lock-reverse IN OUT")
	v, err := strictjson.Parse([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	slices.Reverse(v.Members)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), strictjson.AppendIndent(nil, v, "", "\t"), 0o644))
}

func pinLockTamper(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-lock-tamper def|added IN OUT")
	f, err := lockfile.Parse([]byte(ts.ReadFile(args[1])))
	ts.Check(err)
	switch args[0] {
	case "def":
		changed := bytes.Replace(f.Pins[0].Definition, []byte("7 days"), []byte("8 days"), 1)
		if bytes.Equal(changed, f.Pins[0].Definition) {
			ts.Fatalf("the first pin's definition has no \"7 days\"")
		}
		f.Pins[0].Definition = changed
		f.Pins[0].Digest = etdi.DigestString(string(changed)).String()
	case "added":
		f.Revocations = append(f.Revocations, lockfile.Revocation{KeyID: "sha256:" + strings.Repeat("0", 64)})
	default:
		ts.Fatalf("pin-lock-tamper: def or added")
	}
	b, err := f.Marshal()
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), b, 0o644))
}

func pinLockGeneration(ts *testscript.TestScript, neg bool, args []string) {
	gt := len(args) == 3 && args[0] == "-gt"
	if gt {
		args = args[1:]
	}
	pinUsage(ts, neg, args, 2, "pin-lock-generation [-gt] VAR FILE")
	f, err := lockfile.Parse([]byte(ts.ReadFile(args[1])))
	ts.Check(err)
	if !gt {
		ts.Setenv(args[0], strconv.FormatUint(f.Generation, 10))
		return
	}
	than, err := strconv.ParseUint(ts.Getenv(args[0]), 10, 64)
	ts.Check(err)
	if f.Generation <= than {
		ts.Fatalf("%s has generation %d, not higher than %d", args[1], f.Generation, than)
	}
}

func pinLockExpires(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-lock-expires FILE MIN MAX")
	f, err := lockfile.Parse([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	lo, err := time.ParseDuration(args[1])
	ts.Check(err)
	hi, err := time.ParseDuration(args[2])
	ts.Check(err)
	if d := time.Until(f.Expires); d < lo || d > hi {
		ts.Fatalf("%s expires at %s, in %s: not between %s and %s", args[0], f.Expires, d, lo, hi)
	}
}

func pinNoteKey(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-notekey NAME")
	skey, vkey, err := note.GenerateKey(rand.Reader, "etdi-audit")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".skey"), []byte(skey), 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[0]+".pub"), []byte(vkey+"\n"), 0o644))
}

func pinLockResign(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 5, "pin-lock-resign IN OUT SKEY GEN EXPIRES")
	f, err := lockfile.Parse([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	signer, err := note.NewSigner(strings.TrimSpace(ts.ReadFile(args[2])))
	ts.Check(err)
	f.Generation, err = strconv.ParseUint(args[3], 10, 64)
	ts.Check(err)
	d, err := time.ParseDuration(args[4])
	ts.Check(err)
	f.Expires = time.Now().Add(d).UTC().Truncate(time.Second)
	ts.Check(f.Sign(signer))
	b, err := f.Marshal()
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}

func pinIDP(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-idp VAR")
	ts.Check(idpNpm.ensure())
	iss, stop, err := launchIDP()
	ts.Check(err)
	ts.Defer(stop)
	ts.Setenv(args[0], iss)
}

func pinSetenv(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 2, "pin-setenv VAR TEXT")
	ts.Setenv(args[0], goEscapes(ts, args[1]))
}

func pinRepeat(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-repeat VAR TEXT N")
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	ts.Setenv(args[0], strings.Repeat(args[1], n))
}

func pinEdit(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 4, "pin-edit IN OUT OLD NEW")
	old, repl := goEscapes(ts, args[2]), goEscapes(ts, args[3])
	in := ts.ReadFile(args[0])
	if !strings.Contains(in, old) {
		ts.Fatalf("%s has no %q", args[0], old)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Replace(in, old, repl, 1)), 0o644))
}

// goEscapes reads the backslash escapes of a Go string in s; a double
// quote stands for itself.
func goEscapes(ts *testscript.TestScript, s string) string {
	v, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`)
	ts.Check(err)
	return v
}

func pinUpper(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-upper VAR")
	ts.Setenv(args[0], strings.ToUpper(ts.Getenv(args[0])))
}

func pinRecords(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 3, "pin-records TYPE MACHINE N")
	var recs []struct{ Type, Machine string }
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &recs); err != nil {
		ts.Fatalf("stdout is no history: %v", err)
	}
	n := 0
	for _, r := range recs {
		if r.Type == args[0] && r.Machine == args[1] {
			n++
		}
	}
	if args[2] == "+" && n == 0 || args[2] != "+" && strconv.Itoa(n) != args[2] {
		ts.Fatalf("%d %s records by %s, want %s", n, args[0], args[1], args[2])
	}
}

// sharedEtcd is the etcd the scripts of one test run share.
var sharedEtcd struct {
	once     sync.Once
	endpoint string
	err      error
	prefixes atomic.Int64
}

// fixtureTB is the testing.TB of a fixture that outlives every test: it
// keeps what it is given to clean up for the end of the test run, and a
// failure panics, for the fixture to return as an error.
type fixtureTB struct {
	testing.TB
	dir string
}

type fixtureFailure struct{ msg string }

func (f *fixtureTB) Helper()                        {}
func (f *fixtureTB) Name() string                   { return "scripts" }
func (f *fixtureTB) Failed() bool                   { return false }
func (f *fixtureTB) Logf(string, ...any)            {}
func (f *fixtureTB) Cleanup(fn func())              { cleanupAfterTests(fn) }
func (f *fixtureTB) Fatalf(format string, a ...any) { panic(fixtureFailure{fmt.Sprintf(format, a...)}) }
func (f *fixtureTB) Fatal(a ...any)                 { panic(fixtureFailure{fmt.Sprint(a...)}) }
func (f *fixtureTB) Errorf(format string, a ...any) { panic(fixtureFailure{fmt.Sprintf(format, a...)}) }
func (f *fixtureTB) TempDir() string {
	d, err := os.MkdirTemp(f.dir, "etcd-")
	if err != nil {
		panic(fixtureFailure{err.Error()})
	}
	return d
}

func startSharedEtcd() (endpoint string, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fixtureFailure)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
	}()
	dir, err := os.MkdirTemp(testTmp, "etcd-")
	if err != nil {
		return "", err
	}
	return etcdtest.Start(&fixtureTB{dir: dir}, etcdtest.Options{}).Endpoint(0), nil
}

func pinEtcd(ts *testscript.TestScript, neg bool, args []string) {
	pinUsage(ts, neg, args, 1, "pin-etcd VAR")
	sharedEtcd.once.Do(func() {
		start := time.Now()
		sharedEtcd.endpoint, sharedEtcd.err = startSharedEtcd()
		ts.Logf("etcd started in %s", time.Since(start).Round(time.Millisecond))
	})
	ts.Check(sharedEtcd.err)
	ts.Setenv(args[0], fmt.Sprintf("etcd://%s/script%d", sharedEtcd.endpoint, sharedEtcd.prefixes.Add(1)))
}
