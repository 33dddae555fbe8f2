package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/etcdtest"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/strictjson"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// repairSteps returns the etdi command lines of the repair procedure in
// docs/etcd.md, as an operator types them.
func repairSteps(t *testing.T) [][]string {
	doc, err := os.ReadFile("../../docs/etcd.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- repair-steps:")
	if !ok {
		t.Fatal("docs/etcd.md has no repair steps")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var steps [][]string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "etdi ") {
			steps = append(steps, strings.Fields(line)[1:])
		}
	}
	if len(steps) != 3 {
		t.Fatalf("repair steps: %q", steps)
	}
	return steps
}

// The freeze of a shared history (a record appended without its tree
// hashes, the size raised) makes etdi refuse the store, naming the
// record; the repair steps of docs/etcd.md, run as written against a real
// etcd with the approver's password, bring it back, and the history
// still extends the checkpoint taken before. It stays Go: it runs the
// steps as docs/etcd.md writes them, and freezes the history with etcd's
// client in one transaction.
func TestEtcdRepairSteps(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Auth: true})
	c.Grant("etdi-approver", etcdtest.Prefix("etdi/", etcdtest.ReadWrite))
	c.AddUser("etdi-approver", "approver-pw", "etdi-approver")
	dir := t.TempDir()
	loc := c.URL("etdi")
	env := []string{"ETDI_MACHINE=ops", "ETDI_ETCD_SNAPSHOTS=" + filepath.Join(dir, "snap"),
		"ETDI_ETCD_USER=etdi-approver", "ETDI_ETCD_PASSWORD=approver-pw", "ETDI_AUDIT_PASSWORD=audit-pw"}

	s, err := pin.Open(loc, pin.Options{Etcd: pin.EtcdOptions{Username: "etdi-approver", Password: "approver-pw", SnapshotDir: t.TempDir(), Machine: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	o := &pin.Observation{Server: pin.UnsignedServerKey("files"), Name: "files"}
	o.Tools = append(o.Tools, unsignedTool(t, "read_file"))
	if _, _, err := s.Approve(o, pin.ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	tr, err := s.VerifyLog()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.MkdirAll(filepath.Join(dir, "checkpoints"), 0o755)
	if r := runEtdi(t, dir, env, "audit", "checkpoint", "--pins", loc, "--out", "checkpoints/latest.txt"); r.code != 0 {
		t.Fatalf("checkpoint: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The freeze.
	size := tr.Size
	rec, _ := json.Marshal(pin.Record{Index: size, Type: pin.RecordFinding, Severity: "error", Message: "x"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := func(b string, i int64) string {
		return "etdi/" + b + "/" + string([]byte{0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)})
	}
	if _, err := c.Client(t).Txn(ctx).Then(
		clientv3.OpPut(key("log/records", size), string(rec)),
		clientv3.OpPut("etdi/meta/logSize", string([]byte{0, 0, 0, 0, 0, 0, byte((size + 1) >> 8), byte(size + 1)})),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	named := "invalid at record " + strconv.FormatInt(size, 10)
	if r := runEtdi(t, dir, env, "audit", "verify", "--pins", loc); r.code == 0 || !strings.Contains(r.stdout+r.stderr, named) || !strings.Contains(r.stdout+r.stderr, "etdi audit repair") {
		t.Fatalf("verify of a frozen history: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	steps := repairSteps(t)
	subst := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = strings.ReplaceAll(a, "etcd://HOST:2379/etdi", loc)
		}
		return out
	}
	r := runEtdi(t, dir, env, subst(steps[0])...)
	if r.code != exitSignature || !regexp.MustCompile(`; record `+strconv.FormatInt(size, 10)+`: its prev is not the tree hash`).MatchString(r.stdout) || !strings.Contains(r.stdout, "deletes 1 records") {
		t.Fatalf("step 2: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, dir, env, subst(steps[1])...); r.code != 0 || !strings.Contains(r.stdout, "repaired") {
		t.Fatalf("step 3: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, dir, env, subst(steps[2])...); r.code != 0 || !strings.Contains(r.stdout, "extends the checkpoint") {
		t.Fatalf("step 4: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runEtdi(t, dir, env, subst(steps[0])...); r.code != 0 || !strings.Contains(r.stdout, "nothing to repair") {
		t.Fatalf("repair after the repair: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// unsignedTool is an unsigned tool as check observes it.
func unsignedTool(t *testing.T, name string) pin.Observed {
	v, err := strictjson.Parse([]byte(`{"name":"` + name + `","description":"Tool ` + name + `."}`))
	if err != nil {
		t.Fatal(err)
	}
	c := strictjson.AppendCanonical(nil, v)
	d, _ := etdi.DigestJSON(c)
	return pin.Observed{Name: name, Digest: d, Canonical: c, Signer: pin.Unsigned}
}
