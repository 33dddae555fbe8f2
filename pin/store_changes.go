package pin

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Stamper tells cheaply, without opening the store, whether a pin store
// changed: Read returns a number that changes when anything is committed.
type Stamper interface {
	Read() (uint64, error)
	Close() error
}

// NewStamper returns the [Stamper] of the store at loc: the [Generation] of a
// file ([GenerationReader]), or for an etcd store a watch of the history
// size, which every etdi transaction writes, so that a change committed
// on any machine is seen as soon as etcd tells it.
func NewStamper(loc string, opts Options) Stamper {
	if !IsEtcd(loc) {
		return &GenerationReader{Path: loc}
	}
	w := &headWatcher{done: make(chan struct{})}
	l, err := ParseEtcd(loc)
	if err != nil {
		w.err = err
		close(w.done)
		return w
	}
	eo := opts.Etcd.withDefaults()
	cli, err := etcdClient(l, eo)
	if err != nil {
		w.err = err
		close(w.done)
		return w
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, cli, l.Prefix+"/"+etcdHead, eo.Timeout)
	return w
}

// headWatcher follows the modification revision of an etcd store's
// meta/logSize.
type headWatcher struct {
	mu      sync.Mutex
	head    int64
	err     error
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func (w *headWatcher) set(head int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.head = head
	}
	w.err, w.started = err, true
}

// probeEvery is how often a headWatcher asks etcd for the head besides
// watching it: a watch does not end when etcd becomes unreachable.
const probeEvery = 2 * time.Second

// run reads the head, then watches it from there, asking again every
// probeEvery; when the watch ends or a probe fails it starts again.
func (w *headWatcher) run(ctx context.Context, cli *clientv3.Client, key string, timeout time.Duration) {
	defer close(w.done)
	probe := func() (*clientv3.GetResponse, error) {
		gctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := cli.Get(gctx, key)
		if err == nil {
			var head int64
			if len(resp.Kvs) > 0 {
				head = resp.Kvs[0].ModRevision
			}
			w.set(head, nil)
		} else if ctx.Err() == nil {
			w.set(0, err)
		}
		return resp, err
	}
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		resp, err := probe()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := cli.Watch(wctx, key, clientv3.WithRev(resp.Header.Revision+1))
	watch:
		for {
			select {
			case wr, ok := <-wch:
				if !ok || wr.Err() != nil {
					break watch
				}
				for _, ev := range wr.Events {
					w.set(ev.Kv.ModRevision, nil)
				}
			case <-tick.C:
				if _, err := probe(); err != nil {
					break watch
				}
			case <-ctx.Done():
				break watch
			}
		}
		cancel()
	}
}

// offlineStamp marks stamps read while etcd cannot be reached: they
// change every minute, so that a gate looks at its snapshot's age (and
// fails closed once it is too old) without trying etcd at every call.
const offlineStamp = 1 << 62

// Read returns the last modification revision of the history size seen.
// Until the first answer from etcd, and while it cannot be reached, it
// returns a stamp that changes every minute.
func (w *headWatcher) Read() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil && w.cancel == nil {
		return 0, w.err
	}
	if !w.started || w.err != nil {
		return offlineStamp + uint64(time.Now().Unix()/60), nil
	}
	return uint64(w.head), nil
}

// Close stops the watch.
func (w *headWatcher) Close() error {
	if w.cancel != nil {
		w.cancel()
	}
	<-w.done
	return nil
}
