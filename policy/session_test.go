package policy

import (
	"slices"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

func TestSessionZero(t *testing.T) {
	var s Session
	c := s.Context("fetch", nil, t0)
	if c.CallsThisMinute != 0 || c.CallsOfThisTool != 0 || len(c.SessionScopes) != 0 || c.ArgumentsDigest != ArgumentsDigest(nil) {
		t.Errorf("zero Session: %+v", c)
	}
}

func TestSessionCallsThisMinute(t *testing.T) {
	var s Session
	tool := Tool{Name: "fetch"}
	s.Called(tool, at(0))
	s.Called(tool, at(1))
	s.Called(tool, at(30))
	tests := []struct {
		now  float64
		want int64
	}{
		{30, 3},     // a call at the same instant counts
		{59, 3},     // the call 59 s ago counts
		{59.999, 3}, // and one just under 60 s
		{60, 2},     // the call 60 s ago does not
		{61, 1},     // nor the one at 1
		{89.999, 1}, // the call at 30 is 59.999 s ago
		{90, 0},     // the call at 30 is 60 s ago
		{3600, 0},
	}
	// Context is asked with the clock moving forward only, as a gate does;
	// a fresh Session per question keeps each answer independent of the
	// pruning of the one before.
	for _, tt := range tests {
		var fresh Session
		for _, c := range []float64{0, 1, 30} {
			fresh.Called(tool, at(c))
		}
		if got := fresh.Context("fetch", nil, at(tt.now)).CallsThisMinute; got != tt.want {
			t.Errorf("at %vs: CallsThisMinute = %d, want %d", tt.now, got, tt.want)
		}
	}
	// The same questions in order on one Session.
	for _, tt := range tests {
		if got := s.Context("fetch", nil, at(tt.now)).CallsThisMinute; got != tt.want {
			t.Errorf("in order, at %vs: CallsThisMinute = %d, want %d", tt.now, got, tt.want)
		}
	}
}

func TestSessionSlidingWindow(t *testing.T) {
	var s Session
	tool := Tool{Name: "t"}
	// One call a second for five minutes: the count settles at 59, the
	// call 60 s before being out of the window.
	for i := range 300 {
		now := at(float64(i))
		want := int64(min(i, 59))
		if got := s.Context("t", nil, now).CallsThisMinute; got != want {
			t.Fatalf("call %d: CallsThisMinute = %d, want %d", i, got, want)
		}
		s.Called(tool, now)
	}
	// The memory of old calls is dropped.
	s.mu.Lock()
	kept := len(s.times)
	s.mu.Unlock()
	if kept > 2*60+2 {
		t.Errorf("the session keeps %d call times after 300 calls at 1/s", kept)
	}
}

func TestSessionCallsOfThisTool(t *testing.T) {
	var s Session
	a := Tool{Server: "acme:files", Name: "read_file", Scopes: []string{"files:read"}}
	b := Tool{Server: "acme:web", Name: "fetch", Scopes: []string{"net:fetch"}}
	for i := range 3 {
		s.Called(a, at(float64(i)))
	}
	s.Called(b, at(3))
	// Counts are for the whole session, not the minute.
	later := at(7200)
	for name, want := range map[string]int64{"read_file": 3, "fetch": 1, "write_file": 0, "": 0} {
		if got := s.Context(name, nil, later).CallsOfThisTool; got != want {
			t.Errorf("CallsOfThisTool(%q) = %d, want %d", name, got, want)
		}
	}
	if got := s.Context("fetch", nil, later).CallsThisMinute; got != 0 {
		t.Errorf("CallsThisMinute two hours later = %d", got)
	}
}

func TestSessionScopes(t *testing.T) {
	var s Session
	if got := s.Context("x", nil, t0).SessionScopes; len(got) != 0 {
		t.Errorf("no calls: scopes %q", got)
	}
	s.Called(Tool{Name: "a", Scopes: []string{"net:fetch", "files:read"}}, at(0))
	s.Called(Tool{Name: "b", Scopes: []string{"files:read", "shell:exec"}}, at(1))
	s.Called(Tool{Name: "c"}, at(2))
	want := []string{"files:read", "net:fetch", "shell:exec"}
	c := s.Context("x", []byte(`{"b":1, "a":2}`), at(3))
	if !slices.Equal(c.SessionScopes, want) {
		t.Errorf("SessionScopes = %q, want %q", c.SessionScopes, want)
	}
	if c.ArgumentsDigest != ArgumentsDigest([]byte(`{"a":2,"b":1}`)) {
		t.Errorf("ArgumentsDigest = %s", c.ArgumentsDigest)
	}
	// Scopes are kept for the whole session.
	if got := s.Context("x", nil, at(86400)).SessionScopes; !slices.Equal(got, want) {
		t.Errorf("a day later: SessionScopes = %q", got)
	}
	// The Context's slice is the caller's.
	c.SessionScopes[0] = "changed"
	if got := s.Context("x", nil, at(4)).SessionScopes; !slices.Equal(got, want) {
		t.Errorf("after changing a Context: SessionScopes = %q", got)
	}
}

// TestSessionWindowCap checks that a session calling faster than the
// window holds sees the count stop at maxWindow, and that its memory stays
// bounded.
func TestSessionWindowCap(t *testing.T) {
	var s Session
	tool := Tool{Name: "t"}
	for i := range maxWindow + 100 {
		s.Called(tool, t0.Add(time.Duration(i)*time.Microsecond))
	}
	now := t0.Add(time.Second)
	if got := s.Context("t", nil, now).CallsThisMinute; got != maxWindow {
		t.Errorf("CallsThisMinute = %d, want maxWindow (%d)", got, maxWindow)
	}
	if got := s.Context("t", nil, now).CallsOfThisTool; got != maxWindow+100 {
		t.Errorf("CallsOfThisTool = %d, want every call (%d)", got, maxWindow+100)
	}
	s.mu.Lock()
	kept := len(s.times)
	s.mu.Unlock()
	if kept > 2*maxWindow {
		t.Errorf("the session keeps %d call times", kept)
	}
	// A minute after the last call, none counts.
	if got := s.Context("t", nil, t0.Add(time.Minute+time.Second)).CallsThisMinute; got != 0 {
		t.Errorf("a minute later: CallsThisMinute = %d", got)
	}
}

// TestSessionConcurrent uses one Session from several goroutines (run
// with -race): every call is counted once.
func TestSessionConcurrent(t *testing.T) {
	var s Session
	const goroutines, calls = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			tool := Tool{Name: "t", Scopes: []string{"s:" + string(rune('a'+g))}}
			for i := range calls {
				now := at(float64(i) / 1000)
				_ = s.Context(tool.Name, []byte(`{"i":1}`), now)
				s.Called(tool, now)
			}
		})
	}
	wg.Wait()
	c := s.Context("t", nil, at(1))
	if c.CallsOfThisTool != goroutines*calls || c.CallsThisMinute != goroutines*calls || len(c.SessionScopes) != goroutines {
		t.Errorf("after %d calls: %+v", goroutines*calls, c)
	}
}
