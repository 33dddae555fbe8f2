package pin

import (
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"golang.org/x/mod/sumdb/note"
)

// AuditKeyPEMType is the PEM type of an encrypted audit signing key.
const AuditKeyPEMType = "ENCRYPTED ETDI AUDIT KEY"

// GenerateAuditKey creates a note signing key named name (e.g.
// "etdi-audit") and returns the private key encrypted with password as
// PEM, and the public verifier key (note format, one line).
func GenerateAuditKey(name string, password []byte) (privPEM []byte, vkey string, err error) {
	if len(password) == 0 {
		return nil, "", errors.New("refusing to write an audit key with an empty password")
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return nil, "", err
	}
	sealed, err := encrypted.Encrypt([]byte(skey), password)
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(&pem.Block{Type: AuditKeyPEMType, Bytes: sealed}), vkey, nil
}

// OpenAuditKey decrypts an audit key and returns its signer.
func OpenAuditKey(privPEM, password []byte) (note.Signer, error) {
	block, _ := pem.Decode(privPEM)
	if block == nil || block.Type != AuditKeyPEMType {
		return nil, fmt.Errorf("not an etdi audit key (want PEM type %q)", AuditKeyPEMType)
	}
	skey, err := encrypted.Decrypt(block.Bytes, password)
	if err != nil {
		if strings.Contains(err.Error(), "decryption failed") {
			return nil, errors.New("cannot decrypt the audit key: wrong password or damaged file")
		}
		return nil, fmt.Errorf("cannot decrypt the audit key: %w", err)
	}
	return note.NewSigner(string(skey))
}

// ParseVerifierKey parses a note verifier key (the .pub file's content).
func ParseVerifierKey(text string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(text))
	if err != nil {
		return nil, fmt.Errorf("audit verifier key: %w", err)
	}
	return v, nil
}
