package pin

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/mod/sumdb/tlog"
)

// HistoryRepair is what [RepairEtcdHistory] found, and did when asked to.
type HistoryRepair struct {
	Location string
	// Size is the history's size in etcd (meta/logSize); Valid how many
	// records from the first verify (Valid == Size: nothing to repair).
	Size, Valid int64
	// Problem says what is wrong with record Valid ("" when nothing is).
	Problem string
	// Records and Hashes count the keys under log/records and log/hashes
	// that the repair deletes: every record from Valid on and every tree
	// hash that only those records make, and any key that is not an
	// index.
	Records, Hashes int
	// Bound names the pins and revocations bound to a deleted record:
	// they fail closed until approved or revoked again.
	Bound []string
	// Applied says the repair was committed.
	Applied bool
}

// RepairEtcdHistory cuts the shared history of the etcd store at loc back
// to its longest valid beginning: the records that verify (each holds its
// index, the tree hash before it and its tree hashes, as every etdi
// transaction writes them). It reads the history from etcd itself, not
// from a snapshot, so it works when every machine refuses the store. With
// apply false it only reports; with apply true it deletes the records from
// the first invalid one on and their tree hashes and sets meta/logSize, in
// one etcd transaction that fails if the history changed meanwhile. It
// needs a user that may write the whole prefix (the approver role, or
// root). Pins and revocations bound to a deleted record are named in the
// report: reads of them fail closed until someone approves or revokes
// again.
func RepairEtcdHistory(loc string, opts Options, apply bool) (*HistoryRepair, error) {
	l, err := ParseEtcd(loc)
	if err != nil {
		return nil, err
	}
	eo := opts.Etcd.withDefaults()
	cli, err := etcdClient(l, eo)
	if err != nil {
		return nil, err
	}
	e := &etcdBackend{loc: l.String(), root: l.Prefix + "/", cli: cli, opts: eo}
	ctx := context.Background()
	rctx, cancel := context.WithTimeout(ctx, eo.Timeout)
	sz, err := cli.Get(rctx, e.root+etcdHead)
	cancel()
	if err != nil {
		return nil, e.writeError(err)
	}
	if len(sz.Kvs) == 0 {
		return nil, fmt.Errorf("pin store %s holds no history (no meta/logSize): %w", e.loc, errNoStore)
	}
	rev, headMod := sz.Header.Revision, sz.Kvs[0].ModRevision
	if len(sz.Kvs[0].Value) != 8 {
		return nil, fmt.Errorf("pin store %s: meta/logSize is %d bytes, not 8: set it by hand (docs/etcd.md)", e.loc, len(sz.Kvs[0].Value))
	}
	rep := &HistoryRepair{Location: e.loc, Size: int64(binary.BigEndian.Uint64(sz.Kvs[0].Value))}
	records, oddRecords, err := e.readAt(ctx, "log/records", rev)
	if err != nil {
		return nil, err
	}
	hashes, oddHashes, err := e.readAt(ctx, "log/hashes", rev)
	if err != nil {
		return nil, err
	}
	// The longest beginning that verifies.
	rep.Valid = rep.Size
	err = checkRange(func(i int64) []byte { return records[i] }, func(i int64) []byte { return hashes[i] }, 0, rep.Size)
	var le *LogError
	switch {
	case errors.As(err, &le):
		rep.Valid, rep.Problem = min(le.Record, rep.Size), le.Msg
	case err != nil:
		return nil, err
	}
	ops := repairOps(e.root, rep, records, hashes, oddRecords, oddHashes)
	if rep.Valid == rep.Size && len(ops) == 0 {
		return rep, nil
	}
	if rep.Problem == "" && len(ops) > 0 {
		rep.Problem = "keys under log/ that no record of the history explains"
	}
	// Pins and revocations bound to what goes.
	if rep.Bound, err = e.boundFrom(ctx, rev, rep.Valid); err != nil {
		return nil, err
	}
	if !apply {
		return rep, nil
	}
	ops = append(ops, clientv3.OpPut(e.root+etcdHead, string(u64(uint64(rep.Valid)))))
	rctx, cancel = context.WithTimeout(ctx, eo.Timeout)
	resp, err := cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(e.root+etcdHead), "=", headMod)).Then(ops...).Commit()
	cancel()
	if err != nil {
		return nil, e.writeError(err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("pin store %s: the history changed while it was read; run the repair again", e.loc)
	}
	rep.Applied = true
	return rep, nil
}

var errNoStore = errors.New("no pin store")

// readAt reads the values of bucket (log/records or log/hashes) at
// revision rev, by index, and the keys under it that are not an index
// (odd).
func (e *etcdBackend) readAt(ctx context.Context, bucket string, rev int64) (map[int64][]byte, []string, error) {
	vals, odd := map[int64][]byte{}, []string(nil)
	base := e.root + bucket + "/"
	key, end := base, clientv3.GetPrefixRangeEnd(base)
	for {
		rctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
		resp, err := e.cli.Get(rctx, key, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(fullSyncPage))
		cancel()
		if err != nil {
			return nil, nil, e.writeError(err)
		}
		for _, kv := range resp.Kvs {
			k := strings.TrimPrefix(string(kv.Key), base)
			if len(k) != 8 {
				odd = append(odd, string(kv.Key))
				continue
			}
			vals[int64(binary.BigEndian.Uint64([]byte(k)))] = kv.Value
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return vals, odd, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// repairOps are the deletions that cut the history under root back to
// rep.Valid records: the records and hashes beyond it and the keys under
// log/ that are no index (odd). It counts them in rep.
func repairOps(root string, rep *HistoryRepair, records, hashes map[int64][]byte, oddRecords, oddHashes []string) []clientv3.Op {
	keepHashes := tlog.StoredHashCount(rep.Valid)
	var ops []clientv3.Op
	for i := range records {
		if i >= rep.Valid || i < 0 {
			ops = append(ops, clientv3.OpDelete(root+"log/records/"+string(u64(uint64(i)))))
			rep.Records++
		}
	}
	for i := range hashes {
		if i >= keepHashes || i < 0 {
			ops = append(ops, clientv3.OpDelete(root+"log/hashes/"+string(u64(uint64(i)))))
			rep.Hashes++
		}
	}
	for _, k := range oddRecords {
		ops = append(ops, clientv3.OpDelete(k))
		rep.Records++
	}
	for _, k := range oddHashes {
		ops = append(ops, clientv3.OpDelete(k))
		rep.Hashes++
	}
	return ops
}

// boundFrom names the pins and revocations, at revision rev, bound to a
// history record at index valid or later.
func (e *etcdBackend) boundFrom(ctx context.Context, rev, valid int64) ([]string, error) {
	var bound []string
	for _, b := range []string{"pins", "revoked"} {
		rctx, cancel := context.WithTimeout(ctx, 4*e.opts.Timeout)
		resp, err := e.cli.Get(rctx, e.root+b+"/", clientv3.WithPrefix(), clientv3.WithRev(rev))
		cancel()
		if err != nil {
			return nil, e.writeError(err)
		}
		for _, kv := range resp.Kvs {
			var bd struct {
				Record *int64 `json:"record"`
			}
			if json.Unmarshal(kv.Value, &bd) == nil && bd.Record != nil && *bd.Record >= valid {
				name := strings.TrimPrefix(string(kv.Key), e.root)
				bound = append(bound, string(bytes.ReplaceAll([]byte(name), []byte{0}, []byte("/"))))
			}
		}
	}
	return bound, nil
}
