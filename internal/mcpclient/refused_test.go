package mcpclient

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTTPConnectionRefused: a refused connection is a *RefusedError
// naming the scheme, host and port, not the path or query.
func TestHTTPConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = HTTP(ctx, "http://127.0.0.1:"+port+"/mcp?key=hidden", nil, Options{})
	var re *RefusedError
	if !errors.As(err, &re) || re.Address != "http://127.0.0.1:"+port || strings.Contains(err.Error(), "hidden") {
		t.Fatalf("error %v", err)
	}
}
