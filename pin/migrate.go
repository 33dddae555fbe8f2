package pin

import (
	"errors"

	berrors "go.etcd.io/bbolt/errors"
)

// migrate4 rebuilds the skeletons index: schema 4's skeleton folds blanks
// that are not white space (U+2800, the Hangul fillers) like white space,
// so a name that holds one has another skeleton than schema 3 gave it.
func migrate4(tx *kvTx) error {
	if err := tx.DeleteBucket(bSkeletons); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	if _, err := tx.CreateBucket(bSkeletons); err != nil {
		return err
	}
	return forEachPin(tx, nil, func(p *Pin) error { return indexPin(tx, p) })
}

// migrate5 changes no stored value: schema 5 adds pins of prompts,
// resources and resource templates (keys with 0x01 after the server's
// NUL) and the call records of etdi run, which an etdi that reads up to
// schema 4 would misread; the version keeps it from opening the file.
func migrate5(tx *kvTx) error { return nil }
