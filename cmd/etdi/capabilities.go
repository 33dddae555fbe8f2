package main

import (
	"encoding/json"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/hostconfig"
)

// capabilitiesFlag is --capabilities: a list of client capabilities
// (guard.ParseCapabilities), refused as a usage error when it names one
// etdi does not know.
type capabilitiesFlag struct {
	text string
	caps json.RawMessage
	set  bool
}

func (c *capabilitiesFlag) String() string { return c.text }
func (c *capabilitiesFlag) Type() string   { return "list" }

func (c *capabilitiesFlag) Set(s string) error {
	caps, err := guard.ParseCapabilities(s)
	if err != nil {
		return err
	}
	c.text, c.caps, c.set = s, caps, true
	return nil
}

// capabilitiesOf is what a listing of t declares (docs/live.md#live-servers): the
// --capabilities given; else, for a host configuration entry, what its
// host declares (the host table, docs/hosts.md#how-each-host-reads-an-entry); else none.
func (f *serverFlags) capabilitiesOf(t *target) json.RawMessage {
	switch {
	case f.capabilities.set:
		return f.capabilities.caps
	case t.Entry != nil:
		return json.RawMessage(hostconfig.LaunchOf(t.Entry.Host).Capabilities)
	}
	return nil
}
