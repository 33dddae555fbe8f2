package idp

import (
	"fmt"
	"net/http"
)

// UnreachableError reports an identity provider that could not be asked:
// no connection, a timeout, or a 5xx answer (SPEC.md §13). It is an
// operational failure, not evidence against a token; the token is still
// refused.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("could not reach the identity provider at %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachableStatus reports answers that mean the provider is down rather
// than that it refused.
func unreachableStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout ||
		code == http.StatusInternalServerError
}

// noteUnreachable remembers the first unreachable provider of this
// verifier; Unreachable returns it.
func (v *Verifier) noteUnreachable(err *UnreachableError) {
	v.umu.Lock()
	defer v.umu.Unlock()
	if v.unreachable == nil {
		v.unreachable = err
	}
}

// Unreachable returns the first [*UnreachableError] met by the verifications
// of this verifier, or nil. Each of those verifications failed closed; a
// caller tells the person that the provider could not be reached rather
// than that the token is bad.
func (v *Verifier) Unreachable() error {
	v.umu.Lock()
	defer v.umu.Unlock()
	if v.unreachable == nil {
		return nil
	}
	return v.unreachable
}
