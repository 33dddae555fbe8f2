package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago, for servers whose ports must be known before they start
// (etcd members name each other's peer ports up front). It fails the test
// when it finds none.
//
// A port freed for a server to bind can be taken in between. Ports the
// kernel hands out for outgoing connections are the worst risk, so on
// Linux the ports come from below the ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), picked at random; elsewhere
// the kernel chooses. A caller retries with new ports when a bind fails.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return ports
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	seen := map[int]bool{}
	var ports []int
	lo, hi, ok := belowEphemeral()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no %d free ports on 127.0.0.1", n)
		}
		addr := "127.0.0.1:0"
		if ok {
			p := lo + rand.IntN(hi-lo)
			if seen[p] {
				continue
			}
			addr = fmt.Sprintf("127.0.0.1:%d", p)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		p := l.Addr().(*net.TCPAddr).Port
		if seen[p] {
			l.Close()
			continue
		}
		seen[p] = true
		ls = append(ls, l)
		ports = append(ports, p)
	}
	return ports, nil
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
