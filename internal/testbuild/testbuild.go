// Package testbuild keeps the programs tests build between runs: tests
// only.
package testbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// Dir is where the tests of the checkout at root keep what they build,
// in a folder name ("" for none) of the checkout's own in the user's
// cache; tmp when there is no cache. A go build -o onto a program that is
// up to date with its sources and flags does not link it again, and one
// that is not is linked anew, as the go command compares the build ID it
// recorded in the program.
func Dir(root, name, tmp string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return tmp
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return tmp
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(base, "etdi-test-builds", hex.EncodeToString(sum[:8]), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tmp
	}
	return dir
}
