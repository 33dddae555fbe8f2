package main

import (
	"net/http"

	"github.com/etdi-dev/etdi/guard"
	"github.com/etdi-dev/etdi/internal/hostconfig"
)

// credentialsOfEntry are the credentials of a host configuration entry:
// env values of variables named like a credential (API_KEY, GITHUB_TOKEN,
// ...) or looking like one, and the credentials of its headers, URL and
// arguments.
func credentialsOfEntry(en *hostconfig.Entry) []guard.Credential {
	cs := guard.EnvCredentials(en.Env)
	h := http.Header{}
	for k, v := range en.Headers {
		h.Set(k, v)
	}
	cs = append(cs, guard.URLCredentials(en.URL, h)...)
	return append(cs, guard.CommandCredentials(en.Args)...)
}
