package pin

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// migrate4 rebuilds the skeletons index: schema 4's skeleton folds blanks
// that are not white space (U+2800, the Hangul fillers) like white space,
// so a name that holds one has another skeleton than schema 3 gave it.
func migrate4(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(bSkeletons); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	if _, err := tx.CreateBucket(bSkeletons); err != nil {
		return err
	}
	return forEachPin(tx, nil, func(p *Pin) error { return indexName(tx, p.Server, p.Tool) })
}
