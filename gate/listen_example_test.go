package gate_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/etdi-dev/etdi/gate"
	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/trust"
)

// A Go program offers a stdio server to hosts over Streamable HTTP: every
// host session gets a gate and a server process of its own.
func ExampleListenHTTP() {
	server := guard.Launch{Command: []string{"weather-server"}}
	h, err := gate.ListenHTTP("127.0.0.1:0", gate.HTTPOptions{
		Gate: gate.Options{Options: guard.Options{Policy: &trust.Policy{Unsigned: trust.Warn}, Pins: "pins.db", Name: "weather"}},
		Upstream: func(context.Context) (guard.Conn, error) {
			return guard.StartServer(server, os.Stderr)
		},
		MaxSessions: 4,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close() // ends every session and its server
	fmt.Fprintln(os.Stderr, "listening on", h.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	<-ctx.Done()
}
