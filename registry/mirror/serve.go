package mirror

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// ShutdownTimeout bounds how long [Handler.Serve] waits, once stopped,
// for the requests under way.
const ShutdownTimeout = 10 * time.Second

// Serve answers the requests of ln until ctx is done, then stops
// accepting, lets the requests under way finish (within
// [ShutdownTimeout]) and returns nil; it returns early with the error
// that ends serving otherwise.
//
// On a loopback listener only requests naming a loopback host
// (127.0.0.1, [::1], localhost) are answered: a web page whose name an
// attacker points at 127.0.0.1 (DNS rebinding) gets a 403, not the
// organisation's registry.
func (h *Handler) Serve(ctx context.Context, ln net.Listener) error {
	var handler http.Handler = h
	if IsLoopback(ln.Addr()) {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveHTTP(w, r, true) })
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      orDefault(h.RequestTimeout, DefaultRequestTimeout) + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// IsLoopback reports whether a is a TCP address of a loopback interface.
func IsLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// loopbackHost reports whether the Host of a request names a loopback
// host.
func loopbackHost(host string) bool {
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())
}
