package policy

import (
	"slices"
	"sync"
	"time"
)

// maxWindow bounds the calls a Session remembers for CallsThisMinute: a
// session calling faster than that sees the count stop at maxWindow,
// above any rate limit worth writing.
const maxWindow = 1 << 16

// Session is what policies know of one session so far: the calls it
// forwarded. Safe for concurrent use; the zero value is an empty session.
type Session struct {
	mu      sync.Mutex
	scopes  map[string]bool
	actions map[string]bool
	counts  map[string]int64
	// times[head:] are the times of the calls of the last minute, oldest
	// first.
	times []time.Time
	head  int
}

// Context is the context of a call to tool with those arguments (JSON)
// at now, given the calls recorded before it.
func (s *Session) Context(tool string, args []byte, now time.Time) Context {
	return s.ContextOf(ActionCall, tool, args, now)
}

// ContextOf is the context of an action ([ActionCall], [ActionGet],
// [ActionRead], [ActionComplete]) on the tool, prompt or resource named name
// (Request.Tool.Name), with those arguments, at now: [Context.CallsOfThisTool]
// counts the earlier ones of the same action on the same name.
func (s *Session) ContextOf(action, name string, args []byte, now time.Time) Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prune(now)
	c := Context{CallsThisMinute: int64(len(s.times) - s.head), CallsOfThisTool: s.counts[countKey(action, name)], ArgumentsDigest: ArgumentsDigest(args)}
	for sc := range s.scopes {
		c.SessionScopes = append(c.SessionScopes, sc)
	}
	slices.Sort(c.SessionScopes)
	for a := range s.actions {
		c.SessionActions = append(c.SessionActions, a)
	}
	slices.Sort(c.SessionActions)
	return c
}

// countKey is the key of a name's count: a tool's name alone, another
// action's prefixed, so a prompt never counts for a tool of its name.
func countKey(action, name string) string {
	if action == "" || action == ActionCall {
		return name
	}
	return action + "\x00" + name
}

// Called records a call that was forwarded at now.
func (s *Session) Called(t Tool, now time.Time) { s.Did(ActionCall, t, now) }

// Did records an action ([ActionCall], [ActionGet], [ActionRead],
// [ActionComplete]) that was forwarded at now on t (as in [Request.Tool]):
// its scopes join [Context.SessionScopes], and it counts in
// [Context.CallsThisMinute] and for its name.
func (s *Session) Did(action string, t Tool, now time.Time) {
	if action == "" {
		action = ActionCall
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scopes == nil {
		s.scopes, s.counts, s.actions = map[string]bool{}, map[string]int64{}, map[string]bool{}
	}
	for _, sc := range t.Scopes {
		s.scopes[sc] = true
	}
	s.actions[action] = true
	// A server's tools are bounded by its listing; counts are kept by name
	// for those the gate let through only.
	s.counts[countKey(action, t.Name)]++
	s.prune(now)
	if len(s.times)-s.head == maxWindow {
		s.head++
	}
	s.times = append(s.times, now)
}

// prune forgets the calls older than a minute.
func (s *Session) prune(now time.Time) {
	for s.head < len(s.times) && now.Sub(s.times[s.head]) >= time.Minute {
		s.head++
	}
	// The forgotten are dropped once they are half: amortized O(1).
	if s.head > 0 && s.head >= len(s.times)/2 {
		s.times = append(s.times[:0], s.times[s.head:]...)
		s.head = 0
	}
}
