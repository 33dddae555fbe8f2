package mirror

import (
	"context"
	"time"

	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
)

// Approved is the judge that serves what an audit finds approved: a
// signed entry whose bundle is the one it names, verifies against the
// trust policy, binds the entry's packages, remotes and name, and whose
// tools are all approved in the team's pin store or lockfile
// ([audit.Approved]). Anything else is not served: an unsigned entry
// (even one the trust policy lets run: its tools are known only to a live
// check, so none can be approved here), a bundle that verifies but
// whose tools are not approved or were revoked, an entry that could not
// be judged. The pin database is read for every request: a revocation
// is written only while no judgement holds the database open
// ([audit.MaxHold]), so once written it holds from the next request on.
//
//	a, err := audit.New(audit.Options{Trust: policy, Pins: "pins.db"})
//	...
//	http.ListenAndServe("127.0.0.1:8080", mirror.New(upstream, mirror.Approved(a)))
func Approved(a *audit.Auditor) Judge {
	return func(ctx context.Context, e registry.Entry) Verdict {
		v := a.Judge(ctx, e)
		return Verdict{
			Approved:  v.Status == audit.Approved && v.Pass(),
			Status:    string(v.Status),
			Provider:  v.Provider,
			Server:    v.Server,
			Bundle:    v.BundleDigest,
			CheckedAt: time.Now().UTC().Truncate(time.Second),
		}
	}
}
