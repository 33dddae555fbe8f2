package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/etdi-dev/etdi/internal/confusable"
)

// Get returns the pin of tool on server, or nil.
func (s *Store) Get(server, tool string) (*Pin, error) {
	var p *Pin
	err := s.view(func(tx *kvTx) error {
		var err error
		p, err = getPin(tx, server, tool)
		return err
	})
	return p, err
}

// pinKey is the key of a tool's pin: server key, NUL, tool name. Neither
// part can hold a NUL (both refuse control characters), and the pins of
// one server are contiguous.
func pinKey(server, tool string) []byte { return []byte(server + "\x00" + tool) }

// pinKeyOf is the key of a pin of any item: a tool's pinKey, or server
// key, NUL, 0x01, item, NUL, name for the other items. No approved tool
// name starts with 0x01 (control characters are refused), so the two
// never meet.
func pinKeyOf(server, item, name string) []byte {
	if item == ItemTool {
		return pinKey(server, name)
	}
	return []byte(server + "\x00\x01" + item + "\x00" + name)
}

// keyRef shows a pin key as a reference: server/tool, server/item:name.
func keyRef(k []byte) string {
	server, rest, _ := strings.Cut(string(k), "\x00")
	if item, name, ok := strings.Cut(strings.TrimPrefix(rest, "\x01"), "\x00"); ok && strings.HasPrefix(rest, "\x01") {
		return server + "/" + ItemRef(item, name)
	}
	return server + "/" + rest
}

func getPin(tx *kvTx, server, tool string) (*Pin, error) {
	return getItem(tx, server, ItemTool, tool)
}

func getItem(tx *kvTx, server, item, name string) (*Pin, error) {
	p, err := readItem(tx, server, item, name)
	if p == nil || err != nil {
		return p, err
	}
	if err := checkPin(tx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// readPin reads a pin without checking it against the history: only for
// pins that checkLatest has checked in the same transaction.
func readPin(tx *kvTx, server, tool string) (*Pin, error) {
	return readItem(tx, server, ItemTool, tool)
}

func readItem(tx *kvTx, server, item, name string) (*Pin, error) {
	k := pinKeyOf(server, item, name)
	v := tx.Bucket(bPins).Get(k)
	if v == nil {
		return nil, nil
	}
	var p Pin
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, damagedError("pin", k, err)
	}
	if p.Server != server || p.Item != item || p.Tool != name {
		return nil, &UnjustifiedError{"pin", keyRef(k), p.Record, "the value is the pin of " + p.Ref()}
	}
	return &p, nil
}

func serverInfo(tx *kvTx, server string) (*ServerInfo, error) {
	v := tx.Bucket(bServers).Get([]byte(server))
	if v == nil {
		return nil, nil
	}
	var info ServerInfo
	if err := json.Unmarshal(v, &info); err != nil {
		return nil, fmt.Errorf("server %s is unreadable: %w", server, err)
	}
	return &info, nil
}

// forEachPin calls fn for every pin, or, with server set, every pin of
// that server.
func forEachPin(tx *kvTx, server *string, fn func(p *Pin) error) error {
	c := tx.Bucket(bPins).Cursor()
	var prefix []byte
	if server != nil {
		prefix = []byte(*server + "\x00")
	}
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var p Pin
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("pin %q is unreadable: %w", k, err)
		}
		if err := fn(&p); err != nil {
			return err
		}
	}
	return nil
}

// List returns every pin, by server then tool.
func (s *Store) List() ([]Pin, error) { return s.pins(nil) }

// ServerPins returns the pins of one server (its key), by tool; it reads
// no other server's.
func (s *Store) ServerPins(key string) ([]Pin, error) { return s.pins(&key) }

func (s *Store) pins(server *string) ([]Pin, error) {
	var out []Pin
	err := s.view(func(tx *kvTx) error {
		return forEachPin(tx, server, func(p *Pin) error {
			out = append(out, *p)
			return nil
		})
	})
	return out, err
}

// Server returns what the database holds about a server, or nil.
func (s *Store) Server(key string) (*ServerInfo, error) {
	var info *ServerInfo
	err := s.view(func(tx *kvTx) error {
		var err error
		info, err = serverInfo(tx, key)
		return err
	})
	return info, err
}

// Servers returns every server.
func (s *Store) Servers() ([]ServerInfo, error) {
	var out []ServerInfo
	err := s.view(func(tx *kvTx) error {
		return tx.Bucket(bServers).ForEach(func(_, v []byte) error {
			var info ServerInfo
			if err := json.Unmarshal(v, &info); err != nil {
				return err
			}
			out = append(out, info)
			return nil
		})
	})
	return out, err
}

// getStrings reads an index entry; a damaged one is an error, never
// taken as empty.
func getStrings(b *kvBucket, key string) ([]string, error) {
	var out []string
	if v := b.Get([]byte(key)); v != nil {
		if err := json.Unmarshal(v, &out); err != nil {
			return nil, damagedError("index entry", []byte(key), err)
		}
	}
	return out, nil
}

// skeletonOf is the look-alike form the skeletons index is keyed by.
var skeletonOf = confusable.Skeleton

func putStrings(b *kvBucket, key string, vals []string) error {
	v, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), v)
}

// indexPin records a tool's pin in the names and skeletons indexes; the
// other items are not indexed (shadowing and look-alike names concern
// tools).
func indexPin(tx *kvTx, p *Pin) error {
	if p.Item != ItemTool {
		return nil
	}
	return indexName(tx, p.Server, p.Tool)
}

// indexName records that server pins tool, in the names and skeletons
// indexes.
func indexName(tx *kvTx, server, tool string) error {
	nb, sk := tx.Bucket(bNames), tx.Bucket(bSkeletons)
	servers, err := getStrings(nb, tool)
	if err != nil {
		return err
	}
	if !slices.Contains(servers, server) {
		servers = append(servers, server)
		sort.Strings(servers)
		if err := putStrings(nb, tool, servers); err != nil {
			return err
		}
	}
	skel := skeletonOf(tool)
	names, err := getStrings(sk, skel)
	if err != nil {
		return err
	}
	if !slices.Contains(names, tool) {
		names = append(names, tool)
		sort.Strings(names)
		return putStrings(sk, skel, names)
	}
	return nil
}
