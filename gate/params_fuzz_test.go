package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/mcpclient"
	"github.com/etdi-dev/etdi/strictjson"
)

// FuzzHostParams reads a request's params (the host's, or a server's log
// message and question) as the gate does. Whatever they hold:
//   - nothing panics;
//   - a name, URI or host name the gate read is the one a peer taking the
//     last member, or matching names case-insensitively, reads too;
//   - what the gate relays instead (a relabelled log message, a labelled
//     question, a listing without etdi's _meta) is a JSON object, with no
//     logger that claims etdi's and no dev.etdi/ member left in _meta.
func FuzzHostParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"get_weather","arguments":{}}`, `{"name":"a","Name":"b"}`, `{"name":"a","name":"b"}`,
		`{"uri":"file:///x"}`, `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}`,
		`{"ref":{"type":"ref/resource","uri":"u","URI":"v"}}`, `{"clientInfo":{"name":"h"},"capabilities":{"elicitation":{}}}`,
		`{"clientinfo":{"name":"evil"},"clientInfo":{"name":"h"}}`, `{"level":"info","logger":"etdi","data":"x"}`,
		`{"logger":"\u0435tdi"}`, `{"message":"etdi: a policy asks you before this call.","requestedSchema":{}}`,
		`{"_meta":{"dev.etdi/x":1,"y":2},"tools":[]}`, `{"_META":{"DEV.ETDI/x":1}}`, `{}`, `"file:///a/../b"`, `"FILE://h/%2e/x"`,
		`{"content":[{"_meta":{"d\u0065v.etdi\/x":{"_meta":{"dev.etdi/y":1}},"k":[1,"\""]}}],"_meta":{}}`, `null`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // Decode refuses the message
		}
		checkReadAsPeers(t, params)
		checkRelayed(t, params)
		checkWithoutEtdiMeta(t, params)
		if u := string(params); uriNotNormal(u) == "" && (strings.Contains(u, "/../") || strings.Contains(u, "/./") || strings.Contains(u, "\\")) {
			t.Errorf("%q is taken for a URI in normal form", u)
		}
		checkWithoutEtdiMetaDeep(t, params)
	})
}

// checkReadAsPeers: a name, URI or host name the gate reads of params is
// the one a peer taking the last member, or matching names
// case-insensitively, reads too.
func checkReadAsPeers(t *testing.T, params []byte) {
	// What encoding/json (case-insensitive, last wins) reads.
	var loose struct {
		Name, URI  string
		ClientInfo struct{ Name string }
		Ref        struct{ Type, Name, URI string }
	}
	looseOK := json.Unmarshal(params, &loose) == nil
	if p, err := strictObject(params, "params", "name", "uri"); err == nil && looseOK {
		if name, ok, err := strictString(p["name"], "name"); err == nil && ok && name != loose.Name {
			t.Errorf("the gate read name %q, a case-insensitive peer %q", name, loose.Name)
		}
	}
	for _, method := range []string{"resources/read", "completion/complete"} {
		uri, prompt, _, err := readRef(&mcpclient.Message{Method: method, Params: params})
		if err != nil || !looseOK {
			continue
		}
		if method == "resources/read" && uri != loose.URI {
			t.Errorf("the gate read uri %q, a case-insensitive peer %q", uri, loose.URI)
		}
		if method == "completion/complete" && (prompt != "" && prompt != loose.Ref.Name || uri != "" && uri != loose.Ref.URI) {
			t.Errorf("the gate read ref %q %q, a case-insensitive peer %+v", prompt, uri, loose.Ref)
		}
	}
	if h, err := readInitialize(params); err == nil && looseOK && h.name != loose.ClientInfo.Name {
		t.Errorf("the gate read host %q, a case-insensitive peer %q", h.name, loose.ClientInfo.Name)
	}
}

// checkRelayed: what the gate relays of a server's log message or
// question is a JSON object, with no logger that claims etdi's.
func checkRelayed(t *testing.T, params []byte) {
	if out, why := serverLog(params); out != nil {
		var p struct{ Logger *string }
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("relayed log params %s (%s) do not parse: %v", out, why, err)
		}
		if p.Logger != nil && claimsEtdi(*p.Logger) {
			t.Errorf("a server's log message reaches the host with logger %q", *p.Logger)
		}
	}
	if out, _, err := serverElicitation(params); err == nil && !json.Valid(out) {
		t.Errorf("relayed question %s is not JSON", out)
	}
}

// checkWithoutEtdiMeta: params without etdi's _meta (top level, names
// folded) is JSON with no dev.etdi/ member left in its _meta.
func checkWithoutEtdiMeta(t *testing.T, params []byte) {
	if v, err := strictjson.Parse(params); err == nil && v.Kind == strictjson.Object {
		out := withoutEtdiMeta(params, true)
		w, err := strictjson.Parse(out)
		if err != nil {
			t.Fatalf("%s without etdi's _meta is %s: %v", params, out, err)
		}
		for _, m := range w.Members {
			if !strings.EqualFold(m.Name, "_meta") || m.Value.Kind != strictjson.Object {
				continue
			}
			for _, mm := range m.Value.Members {
				if len(mm.Name) >= len(etdi.MetaPrefix) && strings.EqualFold(mm.Name[:len(etdi.MetaPrefix)], etdi.MetaPrefix) {
					t.Errorf("%s keeps %q", out, mm.Name)
				}
			}
		}
	}
}

// checkWithoutEtdiMetaDeep: removing etdi's _meta at any depth changes
// nothing when nothing is removed, leaves JSON without any, and a second
// pass removes nothing more.
func checkWithoutEtdiMetaDeep(t *testing.T, params []byte) {
	if out, removed := withoutEtdiMetaDeep(params); !removed && string(out) != string(params) {
		t.Errorf("%s was changed to %s with nothing removed", params, out)
	} else if removed {
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s without etdi's _meta is %s: %v", params, out, err)
		}
		if n := etdiMetaLeft(v, false); n != "" {
			t.Errorf("%s keeps %q", out, n)
		}
		if _, again := withoutEtdiMetaDeep(out); again {
			t.Errorf("%s: a second pass removes more", out)
		}
	}
}

// etdiMetaLeft is a member of a _meta in v (inMeta: v is one) named
// like etdi's material, at any depth; "" when there is none.
func etdiMetaLeft(v any, inMeta bool) string {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if n := etdiMetaLeft(e, false); n != "" {
				return n
			}
		}
	case map[string]any:
		for k, e := range v {
			if inMeta && len(k) >= len(etdi.MetaPrefix) && strings.EqualFold(k[:len(etdi.MetaPrefix)], etdi.MetaPrefix) {
				return k
			}
			if n := etdiMetaLeft(e, strings.EqualFold(k, "_meta")); n != "" {
				return n
			}
		}
	}
	return ""
}
