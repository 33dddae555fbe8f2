package lockfile

import (
	"strings"
	"testing"

	"github.com/etdi-dev/etdi/pin"
	bolt "go.etcd.io/bbolt"
)

// An import into a database whose record of a server cannot be read
// fails, naming the server, rather than reading it as a server without
// approved instructions.
func TestImportUnreadableServer(t *testing.T) {
	s := openStore(t)
	team(t, s, "Get the weather.")
	f, err := Export(s)
	if err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("servers")).Put([]byte("acme:weather"), []byte("{not json"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err = pin.Open(path, pin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := Import(s, f, ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "server acme:weather is unreadable") {
		t.Fatalf("import with an unreadable server record: %+v, %v", res, err)
	}
}
