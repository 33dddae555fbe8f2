package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/etdi-dev/etdi/internal/confusable"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/policy"
	"github.com/etdi-dev/etdi/strictjson"
)

// Answer is the person's answer to a call put to them, as call records
// ([github.com/etdi-dev/etdi/pin.Record.Answer]) and errors name it.
type Answer string

// Answers to a call put to the person.
const (
	AnswerAccept      Answer = "accept"
	AnswerDecline     Answer = "decline"
	AnswerCancel      Answer = "cancel"
	AnswerTimeout     Answer = "timeout"
	AnswerUnsupported Answer = "unsupported" // the host declared no elicitation capability
	AnswerInvalid     Answer = "invalid"     // an answer that is not an accept, decline or cancel
	AnswerBusy        Answer = "busy"        // too many calls wait for the person already
	AnswerEnded       Answer = "ended"       // the session ended first
	// AnswerUnshown: the question could not show the arguments whole (too
	// long, not JSON of etdi's profile, or with member names a server may
	// take as one or that look alike), so the person was not asked.
	AnswerUnshown Answer = "unshown"
)

// maxAsking bounds the calls that wait for the person at once: a model
// that calls in a loop gets refusals beyond it, not a pile of questions.
const maxAsking = 8

// askWait is a call waiting for the person's answer.
type askWait struct {
	// m and data are the call as the host sent it, name its tool, e the
	// tool as the host received it, args its arguments, d the decision
	// that asks; server is the session's server.
	m            *mcpclient.Message
	data         []byte
	server, name string
	e            exposure
	args         []byte
	d            policy.Decision
	// withdrawn is closed when the host cancels the call: the question is
	// withdrawn too.
	withdrawn chan struct{}
}

// outcome is what the policies decided of the call, with the person's
// answer.
func (w *askWait) outcome(answer Answer) policyOutcome {
	po := outcomeOf(w.d)
	po.answer = answer
	return po
}

func answerText(a Answer) string {
	switch a {
	case AnswerDecline:
		return "the person declined it"
	case AnswerCancel:
		return "the person dismissed the question"
	case AnswerTimeout:
		return "no answer came in time"
	case AnswerUnsupported:
		return "the host cannot ask (it declared no elicitation capability)"
	case AnswerBusy:
		return fmt.Sprintf("%d calls wait for the person already", maxAsking)
	case AnswerEnded:
		return "the session ended first"
	case AnswerUnshown:
		return "its arguments cannot be shown to the person whole (too long, not JSON of etdi's profile, or with member names a server may take as one or that look alike)"
	}
	return "the host's answer was not an acceptance of this call"
}

// ask puts a call the policies ask about to the person, through the
// host's elicitation, and forwards it only if the person accepts; it
// returns at once (the answer is awaited in a goroutine of its own).
func (g *Gate) ask(m *mcpclient.Message, data []byte, name string, e exposure, t policy.Tool, d policy.Decision, args []byte) {
	answer := Answer("")
	summary, whole := policy.ShowArguments(args)
	switch {
	case !g.st.host.elicit:
		answer = AnswerUnsupported
	case !whole || lookalikeNames(args):
		// The person is asked only about what they can see, as a server
		// reads it.
		answer = AnswerUnshown
	case g.askingCount() >= maxAsking:
		answer = AnswerBusy
	}
	if answer != "" {
		po := outcomeOf(d)
		po.answer = answer
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, d, answer), po)
		return
	}
	w := &askWait{m: m, data: data, server: g.st.server, name: name, e: e, args: args, d: d, withdrawn: make(chan struct{})}
	g.pendMu.Lock()
	g.asking[m.IDKey()] = w
	g.pendMu.Unlock()
	params := elicitation(t, d, summary)
	go func() {
		answer := g.askHost(params, w.withdrawn)
		g.jobs.add(func() { g.asked(w, answer) })
	}()
}

func (g *Gate) askingCount() int {
	g.pendMu.Lock()
	defer g.pendMu.Unlock()
	return len(g.asking)
}

// asked acts on the person's answer: an accepted call is forwarded if its
// tool is still approved as the host received it and no policy now
// forbids it outright (the session moved on while the person read).
func (g *Gate) asked(w *askWait, answer Answer) {
	if answer == AnswerEnded {
		return // answerPending answers it, after every job
	}
	m, name, e, args := w.m, w.name, w.e, w.args
	// The call waits by its id; the host may have cancelled it (withdraw)
	// and used the id again for another call asked about now: this
	// answer is about w alone.
	g.pendMu.Lock()
	waiting := g.asking[m.IDKey()] == w
	if waiting {
		delete(g.asking, m.IDKey())
	}
	g.pendMu.Unlock()
	if !waiting {
		return // the session ended and the call was answered, or the host cancelled it
	}
	po := w.outcome(answer)
	if answer != AnswerAccept {
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, w.d, answer), po)
		return
	}
	g.rejudge()
	now, usable := g.st.usable(itemTool, name)
	if !usable || now.digest != e.digest {
		why, ok := g.st.why[itemTool][name]
		if !ok {
			why = refusal{item: itemTool, name: name, kind: NotListed,
				message: fmt.Sprintf("tool %q changed while the person was asked about the call", name)}
		}
		g.refuseCall(m, itemTool, name, e.digest, args, why, po)
		return
	}
	if again := g.authorize(now.tool, args); again.Effect == policy.Forbid {
		po = outcomeOf(again)
		po.answer = answer
		g.refuseCall(m, itemTool, name, e.digest, args, policyRefusal(name, again, ""), po)
		return
	}
	g.forward(m, w.data, nil, itemTool, name, now, args, po)
}

// withdraw withdraws the question about a call the host cancelled (in
// the jobs goroutine): the call is never forwarded, whatever the answer.
func (g *Gate) withdraw(key string) bool {
	g.pendMu.Lock()
	w := g.asking[key]
	delete(g.asking, key)
	g.pendMu.Unlock()
	if w == nil {
		return false
	}
	close(w.withdrawn)
	g.audit.blocked(w.server, w.name, w.e.digest, w.args, PolicyAsk, w.outcome(AnswerCancel))
	g.logf("the host cancelled its call of tool %q while the person was asked about it: it is not forwarded", clipText(w.name))
	return true
}

// askHost sends elicitation/create to the host and waits for its answer,
// within the ask timeout, or until the call is withdrawn; it tells the
// host when it stops waiting.
func (g *Gate) askHost(params []byte, withdrawn <-chan struct{}) Answer {
	id, key, ch := g.hostOwn.add()
	defer g.hostOwn.take(key)
	g.toHost.send(mcpclient.EncodeRequest(id, "elicitation/create", params))
	timer := time.NewTimer(g.opts.AskTimeout)
	defer timer.Stop()
	withdraw := func(reason string) {
		cancel, _ := json.Marshal(map[string]any{"requestId": json.RawMessage(id), "reason": reason})
		g.toHost.send(mcpclient.EncodeRequest(nil, "notifications/cancelled", cancel))
	}
	select {
	case a := <-ch:
		return readAnswer(a)
	case <-timer.C:
		withdraw("etdi: no answer in time; the call was refused")
		return AnswerTimeout
	case <-withdrawn:
		withdraw("etdi: the call was cancelled")
		return AnswerCancel
	case <-g.ctx.Done():
		return AnswerEnded
	case <-g.gone:
		return AnswerEnded
	}
}

// readAnswer reads the host's answer to elicitation/create: an acceptance
// is action "accept" with content {"allow": true}, each member once.
func readAnswer(m *mcpclient.Message) Answer {
	if m.Error || hasTwice(mcpclient.Names(m.Result)) {
		return AnswerInvalid
	}
	var action string
	if json.Unmarshal(mcpclient.Member(m.Result, "action"), &action) != nil {
		return AnswerInvalid
	}
	switch a := Answer(action); a {
	case AnswerDecline, AnswerCancel:
		return a
	case AnswerAccept:
		content := mcpclient.Member(m.Result, "content")
		if hasTwice(mcpclient.Names(content)) || string(mcpclient.Member(content, "allow")) != "true" {
			return AnswerInvalid
		}
		return AnswerAccept
	}
	return AnswerInvalid
}

// elicitation is the params of the question put to the person: why the
// policy asks, the tool and its scopes, and the arguments (their summary,
// policy.ShowArguments), every piece of text escaped.
func elicitation(t policy.Tool, d policy.Decision, summary string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "etdi: a policy asks you before this call.\n\nTool: %s/%s", termtext.Escape(t.Server), termtext.Escape(t.Name))
	if t.Version != "" {
		fmt.Fprintf(&b, " %s", termtext.Escape(t.Version))
	}
	if t.Signed {
		fmt.Fprintf(&b, ", signed by %s", termtext.Escape(t.Provider))
	} else {
		b.WriteString(", not signed")
	}
	scopes := "none"
	if len(t.Scopes) > 0 {
		scopes = termtext.Escape(strings.Join(t.Scopes, ", "))
	}
	fmt.Fprintf(&b, "\nScopes: %s\n", scopes)
	for i, id := range d.Policies {
		fmt.Fprintf(&b, "Why: %s (policy %s)\n", termtext.Escape(d.Reasons[i]), termtext.Escape(id))
	}
	fmt.Fprintf(&b, "\nArguments:\n%s\n\nAllow this call?", summary)
	params, _ := json.Marshal(map[string]any{
		"message": b.String(),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{"allow": map[string]any{
				"type": "boolean", "title": "Allow this call", "default": false,
				"description": "Tick to let etdi forward this one call to the server.",
			}},
			"required": []string{"allow"},
		},
	})
	return params
}

// lookalikeNames reports whether an object in the arguments (JSON) holds
// two member names that a server matching names case-insensitively takes
// as one (hasTwice), or that look alike (confusable.Skeleton: "p\u0430th"
// and "path", "dry_run" and "dry-run"): the person cannot tell from the
// question which one the tool acts on.
func lookalikeNames(args []byte) bool {
	v, err := strictjson.Parse(args)
	if err != nil {
		return false // not shown whole anyway
	}
	var walk func(v *strictjson.Value) bool
	walk = func(v *strictjson.Value) bool {
		switch v.Kind {
		case strictjson.Object:
			seen := make(map[string]bool, len(v.Members))
			for _, m := range v.Members {
				k := confusable.Skeleton(foldKey(m.Name))
				if seen[k] || walk(m.Value) {
					return true
				}
				seen[k] = true
			}
		case strictjson.Array:
			for _, e := range v.Elems {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
