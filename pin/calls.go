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
// Each record must be of type RecordCall. It returns the transaction's id
// (see Generation).
func (s *Store) AppendCalls(spool string, seq uint64, recs []Record) (uint64, error) {
	if spool == "" {
		return 0, errors.New("pin: no spool id")
	}
	return s.updateID(func(tx *kvTx) error {
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
		v := b.Get([]byte(spool))
		switch {
		case v == nil:
		case len(v) != 8:
			return damagedError("spool mark", []byte(spool), errors.New("not 8 bytes"))
		default:
			seq = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return seq, err
}

// EndSpool forgets the mark of a spool whose records are all appended and
// whose file is gone.
func (s *Store) EndSpool(spool string) error {
	return s.update(func(tx *kvTx) error {
		if b := tx.Bucket(bSpools); b != nil {
			return b.Delete([]byte(spool))
		}
		return nil
	})
}
