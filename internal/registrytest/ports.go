package registrytest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago. A
// port the kernel hands out for an outgoing connection could be taken
// again before the registry binds it, so on Linux the port comes from
// below the ephemeral range, at random; the caller tries another when the
// registry cannot bind it.
func freePort() (int, error) {
	lo, hi, ok := belowEphemeral()
	for tries := 0; tries < 100; tries++ {
		addr := "127.0.0.1:0"
		if ok {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1")
}

// belowEphemeral is [10000, start of the ephemeral range) on Linux when
// that leaves at least 5000 ports.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start < 15000 {
		return 0, 0, false
	}
	return 10000, start, true
}
