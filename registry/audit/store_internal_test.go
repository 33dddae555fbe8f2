package audit

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/etdi-dev/etdi/pin"
)

// A judgement that starts once the shared pin database has been open for
// MaxHold does not join it while others still use it: it waits until the
// store is closed, so overlapping judgements never keep the lock for good
// and a revocation waiting for it gets in.
func TestExpiredStoreIsNotJoined(t *testing.T) {
	db := filepath.Join(t.TempDir(), "pins.db")
	open := func() (*pin.Store, error) { return pin.Open(db, pin.Options{}) }
	var sh sharedStore
	defer sh.close()

	aIn, aOut := make(chan struct{}), make(chan struct{})
	go sh.with(open, func(*pin.Store) error {
		close(aIn)
		<-aOut
		return nil
	})
	<-aIn
	sh.expire() // MaxHold has passed while A still judges

	bRan := make(chan struct{})
	go sh.with(open, func(*pin.Store) error {
		close(bRan)
		return nil
	})
	select {
	case <-bRan:
		t.Fatal("a judgement joined a store past MaxHold while another still used it")
	case <-time.After(300 * time.Millisecond):
	}
	close(aOut)
	<-bRan
}
