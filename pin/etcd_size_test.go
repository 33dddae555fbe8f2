package pin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/internal/etcdtest"
)

// The history's size lowered alone, every record left in place: a
// machine that held the records refuses the store for the size itself
// ("changed other than by appending"), not only for what lies beyond it.
func TestEtcdSizeLoweredAlone(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	loc := c.URL("etdi/size")
	alice := openOn(t, loc, "a", "", Options{})
	for _, srv := range []string{"files", "shell"} {
		if _, _, err := alice.Approve(unsignedObs(t, srv, "tool_of_"+srv), ApproveOptions{By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	snap := t.TempDir()
	openOn(t, loc, "b", snap, Options{}).Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Client(t).Put(ctx, "etdi/size/meta/logSize", string(u64(1))); err != nil {
		t.Fatal(err)
	}
	_, err := Open(loc, Options{Etcd: EtcdOptions{SnapshotDir: snap, Machine: "b", Timeout: time.Second}})
	var hr *historyRewritten
	if !errors.As(err, &hr) || !strings.Contains(err.Error(), "its size went from 2 to") {
		t.Fatalf("size lowered: %v", err)
	}
}
