package pin

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// bSpools holds, for each spool of call records (etdi run --audit-calls),
// the sequence number of the last record appended to the history, so a
// spool left by a gate that was killed is appended exactly once:
//
//	spools/
//	    <spool id>    uint64 big endian: last sequence number appended
var bSpools = []byte("spools")

// AppendCalls appends call records to the history in one transaction, and
// records that the spool spool is appended up to sequence number seq.
// Each record must be of type [RecordCall]. It returns the transaction's id
// (see [Generation]).
func (s *Store) AppendCalls(spool string, seq uint64, recs []Record) (uint64, error) {
	if spool == "" {
		return 0, errors.New("pin: no spool id")
	}
	for _, r := range recs {
		if r.Type != RecordCall {
			return 0, fmt.Errorf("pin: a %q record is not a call record", r.Type)
		}
	}
	if s.spooled() {
		return s.remote.spoolWrite(spool, seq, false, recs)
	}
	id, err := s.updateID(func(tx *kvTx) error {
		b, err := tx.CreateBucketIfNotExists(bSpools)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Type != RecordCall {
				return fmt.Errorf("pin: a %q record is not a call record", r.Type)
			}
			if _, err := appendRecord(tx, r); err != nil {
				return err
			}
		}
		return b.Put([]byte(spool), u64(seq))
	})
	if err != nil && s.clientFallback(err) {
		// A client of an etcd store: its own spool, for an approver
		// to append (docs/fleets.md#roles).
		return s.remote.spoolWrite(spool, seq, false, recs)
	}
	return id, err
}

// SpoolMark returns the last sequence number of spool that was appended
// to the history (0 if none).
func (s *Store) SpoolMark(spool string) (uint64, error) {
	var seq uint64
	err := s.view(func(tx *kvTx) error {
		b := tx.Bucket(bSpools)
		if b == nil {
			return nil
		}
		var err error
		seq, err = spoolMark(b, spool)
		return err
	})
	if err == nil && s.remote != nil {
		// Entries of this machine that wait for an approver count as
		// appended: they will be.
		return s.spooledMark(spool, seq)
	}
	return seq, err
}

func spoolMark(b *kvBucket, spool string) (uint64, error) {
	v := b.Get([]byte(spool))
	switch {
	case v == nil:
		return 0, nil
	case len(v) != 8:
		return 0, damagedError("spool mark", []byte(spool), errors.New("not 8 bytes"))
	}
	return binary.BigEndian.Uint64(v), nil
}

// EndSpool forgets the mark of a spool whose records are all appended and
// whose file is gone.
func (s *Store) EndSpool(spool string) error {
	if s.spooled() {
		_, err := s.remote.spoolWrite(spool, 0, true, nil)
		return err
	}
	err := s.update(func(tx *kvTx) error {
		if b := tx.Bucket(bSpools); b != nil {
			return b.Delete([]byte(spool))
		}
		return nil
	})
	if err != nil && s.clientFallback(err) {
		_, err = s.remote.spoolWrite(spool, 0, true, nil)
	}
	return err
}
