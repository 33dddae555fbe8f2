package audit

import (
	"context"
	"fmt"
	"sync"

	"github.com/etdi-dev/etdi/finding"
	"github.com/etdi-dev/etdi/registry"
)

// DefaultConcurrency is how many entries [Auditor.Audit] judges at a time
// when asked for 0: as many bundles are fetched at once.
const DefaultConcurrency = 8

// MaxConcurrency bounds the entries judged at a time.
const MaxConcurrency = 64

// Summary counts the verdicts of an audit by status.
type Summary struct {
	Entries          int `json:"entries"`
	Approved         int `json:"approved"`
	Verified         int `json:"verified"`
	Unsigned         int `json:"unsigned"`
	ApprovalRequired int `json:"approvalRequired"`
	Blocked          int `json:"blocked"`
	Deleted          int `json:"deleted"`
	Errors           int `json:"errors"`
	// worst is the most severe exit code of a judged entry.
	worst int
}

// Add counts v.
func (s *Summary) Add(v Verdict) {
	s.Entries++
	switch v.Status {
	case Approved:
		s.Approved++
	case Verified:
		s.Verified++
	case Unsigned:
		s.Unsigned++
	case ApprovalRequired:
		s.ApprovalRequired++
	case Blocked:
		s.Blocked++
	case Deleted:
		s.Deleted++
	default:
		s.Errors++
	}
	if v.Status != Error {
		s.worst = finding.Worse(s.worst, v.ExitCode)
	}
}

// ExitCode is the exit code of the audit: the most severe of the
// entries' (12 > 11 > 10 > 14 > 13); else 1 when an entry could not be
// judged, which might have been worse; else 0.
func (s *Summary) ExitCode() int {
	if s.Errors > 0 && (s.worst == finding.ExitOK || s.worst == finding.ExitApproval) {
		return ExitError
	}
	return s.worst
}

// String is the summary line: "12 entries: 3 approved, 0 verified, 2
// unsigned, 1 approval required, 5 blocked, 1 deleted, 0 not judged".
func (s *Summary) String() string {
	noun := "entries"
	if s.Entries == 1 {
		noun = "entry"
	}
	return fmt.Sprintf("%d %s: %d approved, %d verified, %d unsigned, %d approval required, %d blocked, %d deleted, %d not judged",
		s.Entries, noun, s.Approved, s.Verified, s.Unsigned, s.ApprovalRequired, s.Blocked, s.Deleted, s.Errors)
}

// Audit walks the listing of the registry c reads ([registry.Client.Walk],
// every page), judges its entries with up to concurrency at a time
// (0: [DefaultConcurrency]; at most [MaxConcurrency]) and calls fn with
// each verdict in the order of the listing, once per server version
// however often the registry lists it. It returns the summary of
// the verdicts given to fn, and the error that stopped the walk: the
// registry's, fn's, or ctx's.
func (a *Auditor) Audit(ctx context.Context, c *registry.Client, lo registry.ListOptions, concurrency int, fn func(Verdict) error) (Summary, error) {
	var sum Summary
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if concurrency > MaxConcurrency {
		return sum, fmt.Errorf("concurrency %d: at most %d", concurrency, MaxConcurrency)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type job struct {
		e   registry.Entry
		out chan Verdict
	}
	jobs := make(chan job)
	// order holds the verdicts to come in listing order; its capacity
	// bounds the entries held in memory between the walk and fn.
	order := make(chan chan Verdict, 2*concurrency)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.out <- a.Judge(ctx, j.e)
			}
		}()
	}
	var walkErr error
	go func() {
		defer close(order)
		defer close(jobs)
		seen := map[[2]string]bool{}
		walkErr = c.Walk(ctx, lo, func(e registry.Entry) error {
			// A server version is judged once, however often a
			// registry lists it.
			key := [2]string{e.Server.Name, e.Server.Version}
			if seen[key] {
				return nil
			}
			seen[key] = true
			out := make(chan Verdict, 1)
			select {
			case order <- out:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case jobs <- job{e, out}:
				return nil
			case <-ctx.Done():
				out <- newStopped(e, ctx)
				return ctx.Err()
			}
		})
	}()
	var fnErr error
	for out := range order {
		v := <-out
		if fnErr != nil {
			continue // draining after fn failed
		}
		if err := ctx.Err(); err != nil {
			continue
		}
		sum.Add(v)
		if err := fn(v); err != nil {
			fnErr = err
			cancel()
		}
	}
	wg.Wait()
	switch {
	case fnErr != nil:
		return sum, fnErr
	case walkErr != nil:
		return sum, walkErr
	}
	return sum, ctx.Err()
}

// newStopped is the verdict of an entry the audit stopped before judging.
func newStopped(e registry.Entry, ctx context.Context) Verdict {
	v := newVerdict(e)
	v.fail(fmt.Errorf("audit stopped: %w", context.Cause(ctx)))
	return v
}
