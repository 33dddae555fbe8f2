package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/etdi-dev/etdi/internal/mcpclient"
)

// maxCancelled bounds the requests the host cancelled whose answers the
// gate still waits for, to drop them: beyond it the oldest is forgotten
// (its answer, if one comes, is dropped as one to nobody's request).
const maxCancelled = 10_000

// ownRequests are the gate's own requests to one side, waiting for their
// answers, by id key. Their ids are the prefix (random) and a counter.
type ownRequests struct {
	prefix string
	mu     sync.Mutex
	n      int
	wait   map[string]chan *mcpclient.Message
}

func newOwnRequests(prefix string) *ownRequests {
	return &ownRequests{prefix: prefix, wait: map[string]chan *mcpclient.Message{}}
}

// add starts a request: its id, the id's key, and where its answer comes.
func (o *ownRequests) add() ([]byte, string, chan *mcpclient.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	id := []byte(strconv.Quote(o.prefix + strconv.Itoa(o.n)))
	key := mcpclient.IDKey(id)
	ch := make(chan *mcpclient.Message, 1)
	o.wait[key] = ch
	return id, key, ch
}

// take returns and forgets the waiter of the request with that id key
// (nil if none waits).
func (o *ownRequests) take(key string) chan *mcpclient.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch := o.wait[key]
	delete(o.wait, key)
	return ch
}

// is reports whether key is the id key of one of these requests, waited
// for or not.
func (o *ownRequests) is(key string) bool { return strings.HasPrefix(key, "s:"+o.prefix) }

// hostRequest is a request of the host the server has not answered yet.
type hostRequest struct {
	id     []byte
	method string
	// first says a list request asked for the first page (no cursor).
	first bool
	// call is set for an audited tools/call.
	call *callRecord
	// tool and digest are the tool a tools/call calls, as the gate let it
	// through: the resources its result names are remembered as its.
	tool, digest string
	// cancelled says the host cancelled the request: it gets no answer.
	cancelled bool
}

// call sends a request of the gate's own to the server and waits for its
// answer, within the gate's timeout.
func (g *Gate) call(ctx context.Context, method string, params json.RawMessage) ([]byte, error) {
	id, key, ch := g.own.add()
	defer g.own.take(key)
	if err := g.server.Write(ctx, mcpclient.EncodeRequest(id, method, params)); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error {
			return nil, fmt.Errorf("the server answered %s with an error: %s %s", method, clipText(m.ErrCode), clipText(m.ErrMsg))
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.gone:
		return nil, errors.New("the session with the server ended")
	}
}

func (g *Gate) addPending(key string, r *hostRequest) {
	g.pendMu.Lock()
	g.pending[key] = r
	g.pendMu.Unlock()
}

func (g *Gate) hasPending(key string) bool {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	_, ok := g.pending[key]
	_, asking := g.asking[key]
	return ok || asking
}

// cancelPending marks a request of the host waiting for the server as
// cancelled: its answer is dropped, and the end of the session does not
// answer it. initialize, which a host must not cancel, is answered.
func (g *Gate) cancelPending(key string) {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	r := g.pending[key]
	if r == nil || r.cancelled || r.method == "initialize" {
		return
	}
	r.cancelled = true
	g.cancelled = append(g.cancelled, key)
	if len(g.cancelled) > maxCancelled {
		old := g.cancelled[0]
		g.cancelled = g.cancelled[1:]
		if r := g.pending[old]; r != nil && r.cancelled {
			delete(g.pending, old)
			g.audit.finish(r.call, nil)
		}
	}
}

func (g *Gate) takePending(key string) *hostRequest {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	r := g.pending[key]
	delete(g.pending, key)
	return r
}

// answerMalformed answers with an error the host's request that a
// message the gate dropped seems to answer (its id, read leniently), so
// the host does not wait for an answer that will not come.
func (g *Gate) answerMalformed(data []byte) {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &env) != nil || len(env.ID) == 0 {
		return
	}
	if ch := g.own.take(mcpclient.IDKey(env.ID)); ch != nil { // the gate's own listing fails at once
		ch <- &mcpclient.Message{ID: env.ID, Error: true, ErrMsg: "the answer is not a valid JSON-RPC message"}
		return
	}
	if req := g.takePending(mcpclient.IDKey(env.ID)); req != nil {
		g.audit.finish(req.call, nil)
		g.toHost.send(g.errorTo(req.id, -32603, "etdi: the server's answer is not a valid JSON-RPC message; it was withheld", nil))
	}
}

// answerPending answers every request of the host still waiting for the
// server: the session is over, and a host must not wait for ever.
func (g *Gate) answerPending(why error) {
	msg := "etdi: the session with the server ended"
	if why != nil {
		msg += ": " + why.Error()
	}
	g.pendMu.Lock()
	reqs, asking := g.pending, g.asking
	g.pending, g.asking = map[string]*hostRequest{}, map[string]*askWait{}
	g.pendMu.Unlock()
	for _, r := range reqs {
		g.audit.finish(r.call, nil)
		if !r.cancelled {
			g.toHost.send(g.errorTo(r.id, -32000, msg, nil))
		}
	}
	for _, w := range asking {
		g.audit.blocked(w.server, w.name, w.e.digest, w.args, PolicyAsk, w.outcome(AnswerEnded))
		g.toHost.send(g.errorTo(w.m.ID, -32000, msg, nil))
	}
}
