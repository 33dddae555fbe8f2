package pin

import (
	"encoding/json"
	"fmt"
	"time"
)

// RecordLaunch is the history record of a project-scoped host
// configuration entry the user let etdi start (docs/hosts.md#host-configuration-files).
const RecordLaunch = "launch"

// bLaunches holds launch approvals, created on first use:
//
//	launches/
//	    <launch digest>   JSON Launch, bound to its history record
var bLaunches = []byte("launches")

// Launch records that the user let etdi start a project-scoped server
// entry exactly as written: Digest covers the configuration file's path,
// the entry's name and the entry's text, so any change to the command,
// its arguments or its environment makes it unapproved again. It approves
// no tool: the server's tools are still checked against their pins.
type Launch struct {
	Digest  string    `json:"digest"`
	Server  string    `json:"server"`
	File    string    `json:"file"`
	Entry   string    `json:"entry"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Binding Binding   `json:"binding"`
}

// ApproveLaunch records in one transaction that the entry with launch
// digest l.Digest may be started without --project, and its history
// record. Approving an approved launch again changes nothing.
func (s *Store) ApproveLaunch(l Launch) error {
	if l.At.IsZero() {
		l.At = time.Now().UTC()
	}
	return s.update(func(tx *kvTx) error {
		b, err := tx.CreateBucketIfNotExists(bLaunches)
		if err != nil {
			return err
		}
		if ok, err := launchApproved(tx, l.Digest); err != nil || ok {
			return err
		}
		bind, err := appendBound(tx, Record{Type: RecordLaunch, Time: l.At, Server: l.Server, Digest: l.Digest,
			Message: fmt.Sprintf("entry %q of %s", l.Entry, l.File), By: l.By})
		if err != nil {
			return err
		}
		l.Binding = bind
		v, err := json.Marshal(l)
		if err != nil {
			return err
		}
		return b.Put([]byte(l.Digest), v)
	})
}

// LaunchApproved reports whether a launch with this digest was approved.
// An approval the history does not justify is an [*UnjustifiedError], never
// a yes.
func (s *Store) LaunchApproved(digest string) (ok bool, err error) {
	err = s.view(func(tx *kvTx) error {
		ok, err = launchApproved(tx, digest)
		return err
	})
	return ok, err
}

func launchApproved(tx *kvTx, digest string) (bool, error) {
	b := tx.Bucket(bLaunches)
	if b == nil {
		return false, nil
	}
	v := b.Get([]byte(digest))
	if v == nil {
		return false, nil
	}
	var l Launch
	if err := json.Unmarshal(v, &l); err != nil {
		return false, damagedError("launch approval", []byte(digest), err)
	}
	rec, why := boundRecord(tx, l.Binding)
	if why == "" && (rec.Type != RecordLaunch || rec.Digest != digest || l.Digest != digest) {
		why = "its record approves another launch"
	}
	if why != "" {
		return false, &UnjustifiedError{What: "launch approval", Ref: digest, Record: l.Binding.Record, Msg: why}
	}
	return true, nil
}
