package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/redact"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/pin"
	"github.com/etdi-dev/etdi/policy"
)

// BlockedCode is the JSON-RPC error code of a call the gate refuses
// (docs/gate.md#runtime-gate): an implementation-defined server error, with a data
// member {"etdi": "blocked", "kind", "server", "tool", "review",
// "message"}.
const BlockedCode = -32090

// ResourceNotFoundCode is the JSON-RPC error code of a resources/read or
// resources/subscribe of a resource the server does not offer (MCP's
// "Resource not found"), with [BlockedCode]'s data and the URI.
const ResourceNotFoundCode = -32002

// NotListed is the kind named in the error of a request for an entry the
// server does not offer in the gate's own latest listing (answered -32602,
// a resource [ResourceNotFoundCode]), or for any entry while the gate has no
// listing of the server ([BlockedCode]).
const NotListed = "not_listed"

// Options configure a gate.
type Options struct {
	// Options are those of Check: the trust policy, the pin database, the
	// bundle, the name of a server without one, its credentials.
	guard.Options
	// Timeout bounds each listing the gate makes of the server on its own
	// (default 60 s); StartTimeout is not used: the host waits for
	// initialize as it would without the gate.
	Timeout time.Duration
	// AuditCalls records every tools/call in the history: the server, the
	// tool, its pinned digest, the SHA-256 of the canonical arguments, the
	// outcome and the duration; never the arguments or the result.
	AuditCalls bool
	// FlushEvery is how long a call record may wait before it is written
	// to the pin database (default 1 s). Each is spooled to a file beside
	// the database first, so a gate that is killed loses none.
	FlushEvery time.Duration
	// Log receives one line for everything the gate withheld or blocked
	// and why, escaped for a terminal (the host's log); nil discards them.
	Log func(line string)
	// Review is the command that reviews what the gate blocked, without
	// what to review (default "etdi check"); ReviewTarget says how it
	// reaches the server ("--server -- CMD ARGS", "--url URL"). When the
	// gate withholds something of its own listing, it saves that listing
	// beside the pin database (pending/<server>.json, as etdi fetch would)
	// and names it instead: a server may list other tools to a host than
	// to etdi check (tools that need the host's capabilities), and the
	// person must review what the host was offered.
	Review, ReviewTarget string
	// Policies are the call-time policies (docs/policies.md#call-time-policies): every tools/call
	// of an approved tool is authorized before it is forwarded; one they
	// forbid is answered with BlockedCode, one they ask about is put to
	// the person through the host's elicitation and forwarded only when
	// accepted. nil lets every approved tool be called.
	Policies *policy.Set
	// AskTimeout bounds the wait for the person's answer (default 2
	// minutes); without one the call is refused.
	AskTimeout time.Duration
	// PolicyReview is the command that tests a call against the policies,
	// without the tool (default "etdi policy test").
	PolicyReview string
	// ReadOnly says the pin database is a read-only copy (a team
	// lockfile loaded for the session, docs/fleets.md#team-lockfile): the gate records no
	// finding (NoRecord), saves no listing for review beside it, and its
	// review command never approves. AuditCalls cannot be combined with
	// it.
	ReadOnly bool
}

// Gate relays one MCP session between a host and a server and lets
// through only what etdi verified and a person approved (docs/gate.md#runtime-gate):
//
//   - initialize is relayed as the host sent it; before its answer reaches
//     the host, the gate lists the server itself on the same connection
//     and checks the listing as etdi check does. Server instructions that
//     are not the approved ones are withheld.
//   - every tools/list, prompts/list, resources/list and
//     resources/templates/list answer is checked, page by page, and loses
//     every entry that is not approved and unchanged;
//   - tools/call, prompts/get, resources/read, resources/subscribe and
//     completion/complete reach the server only for an entry approved and
//     unchanged in the gate's own latest listing, or, one the host
//     listed, still approved as the host received it, and for resources
//     an approved tool returned in the session; anything else is answered
//     by the gate: BlockedCode for what the server offers and etdi
//     withholds, -32602 (a resource: ResourceNotFoundCode) for what it
//     does not offer;
//   - a request the host cancelled gets no answer;
//   - on a list_changed notification the gate lists the server again
//     before it relays the notification, and blocks what changed;
//   - every member of a host's request it decides on is read strictly: a
//     duplicate or a case variant of one is refused (-32602);
//   - with Policies, prompts/get, resources/read and completion/complete
//     are authorized too, and count for the session;
//   - etdi's own _meta material (dev.etdi/) never reaches the host, nor
//     a server log message under etdi's logger, and a server question
//     that reads like etdi's is labelled as the server's;
//   - what it blocked is told to the host as a notifications/message at
//     level warning (logger etdi), and to Log.
//
// It fails closed: a listing it cannot read, verify or compare passes
// nothing.
type Gate struct {
	opts   Options
	host   guard.Conn
	server guard.Conn

	toHost, toServer *outbox
	jobs             *jobs
	ctx              context.Context
	cancel           context.CancelFunc
	// gone is closed once the server was closed: the gate's own requests
	// stop waiting.
	gone chan struct{}

	// own are the gate's own requests to the server (listings): their
	// prefix makes their ids unlike any host's.
	own *ownRequests

	// pending are the host's requests forwarded to the server, by id key;
	// cancelled are the keys of those the host cancelled, oldest first
	// (some may have been answered since).
	pendMu    sync.Mutex
	pending   map[string]*hostRequest
	cancelled []string
	// links are the resources tools returned in this session.
	links links

	audit *callAudit
	st    gateState // owned by the jobs goroutine
	// saved is the listing the gate saved for review, if any.
	saved string
	// secrets are the configured credentials, masked in everything the
	// gate writes itself (errors, notifications, the log).
	secrets redact.Set
	// relists are the listings waiting to start, by notification method.
	relistMu sync.Mutex
	relists  map[string]*relistJob
	// gen reads the pin database's generation (the jobs goroutine only).
	gen pin.Stamper

	// session is what the policies know of the calls so far.
	session policy.Session
	// asking are the host's calls waiting for the person's answer, by id
	// key (under pendMu).
	asking map[string]*askWait
	// hostOwn are the gate's own requests to the host (questions to the
	// person): their prefix, which the server never sees, makes their ids
	// unlike any the server could send the host.
	hostOwn *ownRequests
}

// New returns a gate; Run relays a session through it.
func New(opts Options) (*Gate, error) {
	if opts.Policy == nil {
		return nil, errors.New("gate: a gate needs a trust policy")
	}
	if opts.Pins == "" {
		return nil, errors.New("gate: a gate needs a pin database")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = time.Second
	}
	if opts.Review == "" {
		opts.Review = "etdi check"
	}
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = 2 * time.Minute
	}
	if opts.PolicyReview == "" {
		opts.PolicyReview = "etdi policy test"
	}
	if opts.ReadOnly {
		if opts.AuditCalls {
			return nil, errors.New("gate: a gate on read-only pins cannot record calls")
		}
		opts.NoRecord = true
	}
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	g := &Gate{opts: opts, own: newOwnRequests("etdi-" + hex.EncodeToString(rnd[:8]) + "-"), pending: map[string]*hostRequest{},
		gone: make(chan struct{}), gen: pin.NewStamper(opts.Pins, opts.PinOptions(false)),
		relists: map[string]*relistJob{}, asking: map[string]*askWait{},
		hostOwn: newOwnRequests("etdi-ask-" + hex.EncodeToString(rnd[8:]) + "-")}
	g.st.init()
	for _, c := range opts.Credentials {
		g.secrets.Add(c.Value)
	}
	return g, nil
}

// errorTo is an error answer of the gate's own, its text clipped and with
// configured secrets masked.
func (g *Gate) errorTo(id []byte, code int, msg string, data []byte) []byte {
	return mcpclient.EncodeError(id, code, g.mask(clipText(g.secrets.String(msg))), data)
}

// Run relays the session between host and server until one of them ends
// it or ctx is done, then closes both (a server process is always
// reaped). It returns nil when the host ended the session, and why
// otherwise.
func (g *Gate) Run(ctx context.Context, host, server guard.Conn) error {
	g.host, g.server = host, server
	g.ctx, g.cancel = context.WithCancel(ctx)
	defer g.cancel()
	g.toHost, g.toServer, g.jobs = newOutbox(), newOutbox(), newJobs()
	if g.opts.AuditCalls {
		a, err := startAudit(g.opts)
		if err != nil {
			host.Close()
			server.Close()
			return err
		}
		g.audit = a
	}
	ended := make(chan error, 4)
	jobsDone, writers := make(chan struct{}), make(chan struct{}, 2)
	go func() { defer close(jobsDone); g.jobs.run(g.ctx) }()
	go func() {
		defer func() { writers <- struct{}{} }()
		if err := g.toServer.run(func(m []byte) error { return server.Write(g.ctx, m) }); err != nil {
			ended <- fmt.Errorf("writing to the server: %w", err)
		}
	}()
	go func() {
		defer func() { writers <- struct{}{} }()
		if err := g.toHost.run(func(m []byte) error { return host.Write(g.ctx, m) }); err != nil {
			ended <- fmt.Errorf("writing to the host: %w", err)
		}
	}()
	go func() { ended <- g.readServer() }()
	hostDone := make(chan error, 1)
	go func() { hostDone <- g.readHost() }()

	var why error
	select {
	case err := <-hostDone:
		why = err // nil: the host ended the session
	case why = <-ended:
	case <-ctx.Done():
		why = ctx.Err()
	}
	// The server is ended first (a process is reaped): whatever it still
	// had to say is moot. The decisions already asked for are made (a
	// listing of the gate's own fails at once), then every request of the
	// host still waiting is answered, and what is queued for the host is
	// delivered, within a bound.
	server.Close()
	close(g.gone)
	g.jobs.close()
	<-jobsDone
	g.answerPending(why)
	g.links.mu.Lock()
	n := g.links.dropped
	g.links.mu.Unlock()
	if n > 0 {
		g.logf("did not remember %d resources tools returned in this session beyond the first %d: the host could not read them", n, maxLinks)
	}
	g.toServer.close(nil)
	g.toHost.close(nil)
	flushed := time.After(2 * time.Second)
	for range 2 {
		select {
		case <-writers:
			continue
		case <-flushed:
		}
		// A side that does not read: give up on it (a write blocked on a
		// pipe cannot be interrupted; it ends with the process).
		g.cancel()
		break
	}
	g.cancel()
	host.Close()
	g.gen.Close()
	if g.audit != nil {
		if err := g.audit.stop(); err != nil && why == nil {
			why = err
		}
	}
	return why
}

// readHost reads the host's messages until it ends the session.
func (g *Gate) readHost() error {
	for {
		data, err := g.host.Read(g.ctx)
		if err != nil {
			switch {
			case g.ctx.Err() != nil:
				return g.ctx.Err()
			case errors.Is(err, io.EOF):
				return nil // the host closed its side: the session is over
			}
			return fmt.Errorf("reading from the host: %w", err)
		}
		m, err := mcpclient.Decode(data)
		if err != nil {
			g.toHost.send(g.errorTo(nil, -32700, "etdi: not a JSON-RPC message: "+err.Error(), nil))
			continue
		}
		if !m.Request {
			// The host answers a request of the gate's own (a question
			// to the person), or of the server (sampling, elicitation,
			// roots): relayed as it is.
			if ch := g.hostOwn.take(m.IDKey()); ch != nil {
				ch <- m
				continue
			}
			if g.hostOwn.is(m.IDKey()) {
				// An answer to a question the gate no longer waits for
				// (given again, or after the wait ended): never the
				// server's, which must not learn the ids of the gate's
				// questions (it could send its own under the next one).
				g.logf("dropped an answer of the host to a question etdi no longer waits for")
				continue
			}
			g.toServer.send(data)
			continue
		}
		s := g.toServer.reserve()
		g.jobs.do(func() { g.fromHost(m, data, s) })
	}
}

// readServer reads the server's messages until it ends.
func (g *Gate) readServer() error {
	for {
		data, err := g.server.Read(g.ctx)
		if err != nil {
			if g.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the server ended the session: %w", err)
		}
		m, err := mcpclient.Decode(data)
		if err != nil {
			g.logf("dropped a message from the server that is not JSON-RPC: %v", err)
			g.answerMalformed(data)
			continue
		}
		if m.Request {
			// etdi's own _meta material comes from etdi alone.
			if params, ok := withoutEtdiMetaDeep(m.Params); ok {
				g.logf("removed etdi's _meta material from the server's %s", clipText(m.Method))
				m.Params, data = params, mcpclient.EncodeRequest(m.ID, m.Method, params)
			}
		}
		switch {
		case !m.Request:
			g.fromServerAnswer(m, data)
		case m.ID != nil && m.Method == "elicitation/create":
			// A question of the server to the person: one that reads like
			// etdi's own is labelled as the server's.
			params, why, err := serverElicitation(m.Params)
			switch {
			case err != nil:
				g.logf("refused the server's elicitation/create: %v", err)
				g.toServer.send(g.errorTo(m.ID, -32602, "etdi: elicitation/create refused: "+err.Error(), nil))
			case why != "":
				g.logf("labelled the server's elicitation/create as the server's: %s", why)
				g.toHost.send(mcpclient.EncodeRequest(m.ID, m.Method, params))
			default:
				g.toHost.send(data)
			}
		case m.ID != nil:
			// A request of the server to the host: relayed in order.
			g.toHost.send(data)
		case m.Method == "notifications/message":
			// etdi's own notices have logger "etdi": a server's that
			// claims it is relabelled.
			params, why := serverLog(m.Params)
			switch {
			case params == nil:
				g.logf("dropped a notifications/message of the server: %s", why)
			case why != "":
				g.logf("relabelled a notifications/message of the server: %s", why)
				g.toHost.send(mcpclient.EncodeRequest(nil, m.Method, params))
			default:
				g.toHost.send(data)
			}
		default:
			g.fromServerNotification(m, data)
		}
	}
}

// fromHost decides about one request or notification of the host (in
// the jobs goroutine); s is its place in what goes to the server.
func (g *Gate) fromHost(m *mcpclient.Message, data []byte, s *slot) {
	key := m.IDKey()
	if m.ID != nil {
		if g.own.is(key) || g.hasPending(key) {
			g.toServer.fill(s)
			g.toHost.send(g.errorTo(m.ID, -32600, "etdi: request id "+string(m.ID)+" is already in use", nil))
			return
		}
	}
	switch m.Method {
	case "server/discover", "subscriptions/listen":
		// The stateless handshake of MCP 2026-07-28 (SEP-2575) has no
		// initialize for the gate to check first; the spec has a host fall
		// back to initialize when server/discover fails, so it does.
		g.toServer.fill(s)
		if m.ID != nil {
			g.toHost.send(g.errorTo(m.ID, -32601, "etdi: "+m.Method+" is not relayed: a session through etdi begins with initialize", nil))
		}
		return
	case "initialize":
		// Who the host is and whether it can ask the person, for the
		// call-time policies, as the session's first initialize says (MCP
		// has one; a later one must not rename the host for the
		// policies); the request is relayed as it is.
		h, err := readInitialize(m.Params)
		if err != nil {
			g.refuseParams(m, s, err)
			return
		}
		if !g.st.host.known && m.ID != nil {
			g.st.host = h
		}
	case "notifications/cancelled":
		// The host withdrawing a question of the gate's is not the
		// server's to see (see readHost); a call it cancels while the
		// person is asked about it is never forwarded (the server never
		// saw it).
		p, err := strictObject(m.Params, "params", "requestId")
		if err != nil {
			g.refuseParams(m, s, err)
			return
		}
		key := mcpclient.IDKey(p["requestId"])
		if g.hostOwn.is(key) || g.withdraw(key) {
			g.toServer.fill(s)
			return
		}
		// Relayed to the server, which may stop; the host gets no answer
		// for the request, whatever the server still sends.
		g.cancelPending(key)
	case "notifications/initialized":
		// etdi sends it itself when the answer to initialize comes, before
		// its own listing: the server receives exactly one, even from a
		// host that sends its own too early.
		g.toServer.fill(s)
		return
	case "tools/call", "prompts/get":
		g.decide(m, data, s)
		return
	case "resources/read", "resources/subscribe", "completion/complete":
		g.decideRef(m, data, s)
		return
	}
	if m.ID != nil {
		req := &hostRequest{id: m.ID, method: m.Method}
		if _, ok := listOfMethod[m.Method]; ok {
			// "Cursor" beside (or instead of) "cursor" would have the
			// gate take a later page for the first.
			p, err := strictObject(m.Params, "params", "cursor")
			if err != nil {
				g.refuseParams(m, s, err)
				return
			}
			req.first = p["cursor"] == nil
		}
		g.addPending(key, req)
	}
	g.toServer.fill(s, data)
}

// refuseParams answers a request of the host whose params the gate cannot
// read strictly with -32602 (a notification is dropped); it never reaches
// the server.
func (g *Gate) refuseParams(m *mcpclient.Message, s *slot, err error) {
	g.toServer.fill(s)
	g.logf("refused %s of the host: %v", clipText(m.Method), err)
	if m.ID != nil {
		g.toHost.send(g.errorTo(m.ID, -32602, "etdi: "+m.Method+" refused: "+err.Error(), nil))
	}
}

// fromServerAnswer routes an answer of the server: to the gate's own
// request, or to the host's, checked first when it is a listing.
func (g *Gate) fromServerAnswer(m *mcpclient.Message, data []byte) {
	key := m.IDKey()
	if ch := g.own.take(key); ch != nil {
		ch <- m
		return
	}
	req := g.takePending(key)
	if req == nil {
		g.logf("dropped an answer of the server to a request nobody sent (id %s)", clipText(string(m.ID)))
		return
	}
	if req.cancelled {
		g.audit.finish(req.call, m)
		g.logf("dropped the server's answer to %s (id %s): the host cancelled it", clipText(req.method), clipText(string(m.ID)))
		return
	}
	switch req.method {
	case "initialize":
		s := g.toHost.reserve()
		g.jobs.add(func() { g.initialized(m, data, s) })
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		s := g.toHost.reserve()
		g.jobs.add(func() { g.filterPage(req, m, data, s) })
	case "tools/call":
		g.audit.finish(req.call, m)
		if !m.Error {
			// Before the host can read them: the resources the result
			// names are the host's to read while the tool is approved.
			g.rememberLinks(req.tool, req.digest, m.Result)
		}
		g.toHost.send(g.withoutEtdiMetaResult(m, data))
	default:
		g.toHost.send(g.withoutEtdiMetaResult(m, data))
	}
}

// withoutEtdiMetaResult is the server's answer data (m) to a request of
// the host without etdi's own _meta material (withoutEtdiMetaDeep).
func (g *Gate) withoutEtdiMetaResult(m *mcpclient.Message, data []byte) []byte {
	if m.Error {
		return data
	}
	result, ok := withoutEtdiMetaDeep(m.Result)
	if !ok {
		return data
	}
	g.logf("removed etdi's _meta material from the server's answer (id %s)", clipText(string(m.ID)))
	return mcpclient.EncodeResult(m.ID, result)
}

// fromServerNotification relays a notification of the server; a
// list_changed is relayed after the gate listed the server again. Those
// that come while a listing for them waits to start are answered by that
// one listing: a flood costs one listing at a time, not one each. What is
// relayed is the bare notification: its parameters mean nothing to a host,
// and a server could pad them.
func (g *Gate) fromServerNotification(m *mcpclient.Message, data []byte) {
	var items []string
	switch m.Method {
	case "notifications/tools/list_changed":
		items = []string{itemTool}
	case "notifications/prompts/list_changed":
		items = []string{itemPrompt}
	case "notifications/resources/list_changed":
		items = []string{itemResource, itemTemplate}
	default:
		g.toHost.send(data)
		return
	}
	s := g.toHost.reserve()
	g.relistMu.Lock()
	defer g.relistMu.Unlock()
	if job := g.relists[m.Method]; job != nil {
		job.slots = append(job.slots, s)
		return
	}
	job := &relistJob{slots: []*slot{s}}
	g.relists[m.Method] = job
	bare := mcpclient.EncodeRequest(nil, m.Method, nil)
	g.jobs.add(func() {
		g.relistMu.Lock()
		delete(g.relists, m.Method) // a change from now on asks for another listing
		slots := job.slots
		g.relistMu.Unlock()
		g.relist(items, nil)
		g.toHost.fill(slots[0], bare)
		for _, s := range slots[1:] {
			g.toHost.fill(s)
		}
		g.tellBlocked()
	})
}

// relistJob is a listing asked for by list_changed notifications that has
// not started: the places of those notifications in what goes to the host.
type relistJob struct{ slots []*slot }

// logf writes one line to the host's log, escaped for a terminal.
func (g *Gate) logf(format string, args ...any) {
	if g.opts.Log != nil {
		g.opts.Log(termtext.Escape(g.mask(fmt.Sprintf("etdi: "+format, args...))))
	}
}

// mask masks the configured secrets in s (secrets), and what clipText
// left of one where it cut s or a text s quotes: the start of a secret
// right before "..." no longer matches the whole secret.
func (g *Gate) mask(s string) string {
	s = g.secrets.String(s)
	if !strings.Contains(s, "...") {
		return s
	}
	for _, c := range g.opts.Credentials {
		if len(c.Value) <= redact.MinLen || !strings.Contains(s, c.Value[:redact.MinLen]) {
			continue
		}
		for k := len(c.Value) - 1; k >= redact.MinLen; k-- {
			s = strings.ReplaceAll(s, c.Value[:k]+"...", redact.Mask+"...")
		}
	}
	return s
}

// clipText shortens server text quoted in a message.
func clipText(s string) string {
	if len(s) <= 512 {
		return s
	}
	cut := s[:512]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "..."
}
