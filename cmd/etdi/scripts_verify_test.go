package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etdi-dev/etdi/internal/sigstoretest"
	"github.com/etdi-dev/etdi/internal/termtext"
	"github.com/etdi-dev/etdi/internal/tuftest"
	"github.com/etdi-dev/etdi/keyless"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// The fixtures of the scripts of verification, signing, keys, trust,
// identity providers, keyless signing, KMS, TUF, outputs and manifests
// (verify_, sign_, key_, trust_, idp_, keyless_, kms_, tuf_, output_,
// manifest_).
//
// Environment of every script:
//
//	$IDPDIR    testdata/idp: the oidc-provider server and the jose token
//	           maker (after verify-idp or verify-neednode-idp)
//
// Commands:
//
//	verify-json [-set VAR] FILE [NAME:]PATH...
//	                     prints what PATH selects in the JSON document FILE.
//	                     A PATH is dot-separated: a member name, * for every
//	                     element of an array (or value of an object), or
//	                     MEMBER=VALUE, which keeps only the objects whose
//	                     MEMBER is the string (or number, or boolean) VALUE
//	                     (a VALUE holds no dot).
//	                     NAME:PATH prints one line "NAME v1 v2 ...", each
//	                     value as JSON with everything but printable ASCII
//	                     escaped (\u202e), or, for NAME:count(PATH), "NAME N",
//	                     the number of values; a bare PATH prints each value raw
//	                     (a string as its text), one a line; -set VAR sets
//	                     VAR to the one value PATH selects, raw, instead.
//	verify-schema SCHEMA FILE
//	                     FILE is one JSON document valid under the JSON Schema
//	                     schemas/SCHEMA of the repository (formats asserted)
//	verify-replace IN OUT REGEXP REPLACEMENT
//	                     writes IN to OUT with every match of REGEXP replaced
//	                     (regexp.ReplaceAllString); fails if nothing matches
//	verify-tamper IN OUT writes the bundle IN to OUT with the first four
//	                     characters of its signature replaced by AAAA
//	verify-noraw         fails if the stdout or stderr of the last command
//	                     holds a code point that hides or forges text on a
//	                     terminal (a control, bidi, zero-width, tag, ...),
//	                     or is not UTF-8; a line feed is allowed
//	verify-freeport VAR  sets VAR to a TCP port of 127.0.0.1 nothing listens on
//	verify-subst IN OUT  writes IN to OUT with each ${VAR} replaced by VAR's value
//	verify-widetool FILE writes a tools/list of one tool hiding text where a
//	                     shortened display would not show it (see wideTool)
//	verify-denselist FILE TOOLS WORDS
//	                     writes a tools/list of TOOLS tools, each an object
//	                     with a name and an enum of WORDS distinct words:
//	                     2 + TOOLS*(4+WORDS) JSON values
//	verify-neednode-idp  installs testdata/idp's npm packages once per test run
//	verify-idp           starts the oidc-provider of testdata/idp on a free
//	                     loopback port for this script, sets $IDP_URL to its
//	                     issuer; it is stopped when the script ends
//	verify-idp-stop      stops it before
//	verify-idp-token CLIENT FILE NAME=VALUE...
//	                     asks $IDP_URL's token endpoint for a client
//	                     credentials token of CLIENT (secret CLIENT-secret)
//	                     with the form values given (VALUE @F: the contents
//	                     of the file F) and writes the access token to FILE
//	verify-jwt JWT OUT   writes the payload (claims) of the JWT in file JWT to OUT
//	verify-jose-claims BINDING OUT
//	                     writes to OUT the claims of an access token of
//	                     https://idp.example.com for acme-ci (audience urn:etdi,
//	                     scope net:fetch, valid for ten minutes from now) with
//	                     the authorization_details of the --print-binding
//	                     output BINDING
//	verify-kms VAR       builds, once per test run, etdi with -tags kms
//	                     (etdi-kms) and the KMS plugin of testdata/kmsplugin
//	                     (sigstore-kms-etditest) into one folder, and sets
//	                     VAR to it
//	verify-ecdsakey KEY PUB
//	                     writes a new ECDSA P-256 private key (PEM, 0600) and
//	                     its public key
//	verify-sigstore ROOT starts a Sigstore instance (Fulcio, Rekor and the
//	                     GitHub Actions token request API) on 127.0.0.1 for
//	                     this script, writes its trusted root to ROOT and sets
//	                     $SIGSTORE_URL, $SIGSTORE_TOKEN_URL and
//	                     $SIGSTORE_REQUEST_TOKEN; its tokens are for the
//	                     workflow .github/workflows/release.yml of
//	                     acme/weather at refs/tags/v1.0.0
//	verify-sigstore-claims REPO REF
//	                     its tokens are then for REPO's release workflow at REF
//	verify-sigstore-served TOKENS ENTRIES
//	                     it served exactly TOKENS tokens and made ENTRIES log
//	                     entries
//	verify-attest DIR OUT
//	                     does what another Sigstore tool (GitHub's attest
//	                     action) does with etdi sign --attest-inputs DIR: an
//	                     in-toto statement of DIR's predicate and subjects,
//	                     built with encoding/json in its own member order and
//	                     layout, signed keylessly at the script's Sigstore
//	                     instance, the bundle written to OUT
//	verify-tuf ROOT      starts a TUF repository on 127.0.0.1 publishing the
//	                     trusted root of the script's Sigstore instance
//	                     (verify-sigstore first), writes the repository's
//	                     root.json to ROOT and sets $TUF_URL
//	verify-tuf-tamper    publishes another instance's trusted root, then
//	                     serves a third one's in its place, the metadata
//	                     unchanged (a compromised mirror)
func init() {
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		env.Setenv("IDPDIR", idpDir)
		return nil
	})
	for name, cmd := range map[string]scriptCmd{
		"verify-json":            cmdVerifyJSON,
		"verify-schema":          cmdVerifySchema,
		"verify-replace":         cmdVerifyReplace,
		"verify-tamper":          cmdVerifyTamper,
		"verify-noraw":           cmdVerifyNoRaw,
		"verify-freeport":        cmdVerifyFreePort,
		"verify-subst":           cmdVerifySubst,
		"verify-widetool":        cmdVerifyWideTool,
		"verify-denselist":       cmdVerifyDenseList,
		"verify-neednode-idp":    cmdVerifyNeedIDPNode,
		"verify-idp":             cmdVerifyIDP,
		"verify-idp-stop":        cmdVerifyIDPStop,
		"verify-idp-token":       cmdVerifyIDPToken,
		"verify-jwt":             cmdVerifyJWT,
		"verify-jose-claims":     cmdVerifyJoseClaims,
		"verify-kms":             cmdVerifyKMS,
		"verify-ecdsakey":        cmdVerifyECDSAKey,
		"verify-sigstore":        cmdVerifySigstore,
		"verify-sigstore-claims": cmdVerifySigstoreClaims,
		"verify-sigstore-served": cmdVerifySigstoreServed,
		"verify-attest":          cmdVerifyAttest,
		"verify-tuf":             cmdVerifyTUF,
		"verify-tuf-tamper":      cmdVerifyTUFTamper,
	} {
		scriptCmds[name] = cmd
	}
}

// scriptTB is the script as a testing.TB, for the fixtures of the
// internal/...test packages: they fail the script, clean up when it ends
// and make their folders in $WORK. Other methods are not provided.
func scriptTB(ts *testscript.TestScript) testing.TB { return &scriptT{ts: ts} }

type scriptT struct {
	testing.TB // nil: only the methods below are provided
	ts         *testscript.TestScript
}

func (t *scriptT) Helper()                           {}
func (t *scriptT) Cleanup(f func())                  { t.ts.Defer(f) }
func (t *scriptT) Fatal(args ...any)                 { t.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (t *scriptT) Fatalf(format string, args ...any) { t.ts.Fatalf(format, args...) }
func (t *scriptT) Errorf(format string, args ...any) { t.ts.Fatalf(format, args...) }
func (t *scriptT) Logf(format string, args ...any)   { t.ts.Logf(format, args...) }
func (t *scriptT) TempDir() string {
	dir, err := os.MkdirTemp(t.ts.Getenv("WORK"), "fixture-")
	t.ts.Check(err)
	return dir
}

// fixtureState holds a script's running fixtures, by script.
type fixtureState struct {
	sigstore *sigstoretest.Instance
	tuf      *tuftest.Repo
	idpStop  func()
}

var scriptState sync.Map // *testscript.TestScript -> *fixtureState

func stateOf(ts *testscript.TestScript) *fixtureState {
	v, loaded := scriptState.LoadOrStore(ts, &fixtureState{})
	if !loaded {
		ts.Defer(func() { scriptState.Delete(ts) })
	}
	return v.(*fixtureState)
}

func cmdVerifyJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! verify-json")
	}
	set := ""
	if len(args) > 0 && args[0] == "-set" {
		if len(args) < 2 {
			ts.Fatalf("usage: verify-json [-set VAR] FILE [NAME:]PATH...")
		}
		set, args = args[1], args[2:]
	}
	if len(args) < 2 || set != "" && len(args) != 2 {
		ts.Fatalf("usage: verify-json [-set VAR] FILE [NAME:]PATH...")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s: not JSON: %v", args[0], err)
	}
	if dec.More() {
		ts.Fatalf("%s: more than one JSON value", args[0])
	}
	for _, arg := range args[1:] {
		name, path, named := strings.Cut(arg, ":")
		if !named {
			path = arg
		}
		count := false
		if inner, ok := strings.CutPrefix(path, "count("); ok && named && strings.HasSuffix(inner, ")") {
			count, path = true, strings.TrimSuffix(inner, ")")
		}
		vals := selectJSON([]any{doc}, path)
		switch {
		case set != "":
			if len(vals) != 1 {
				ts.Fatalf("%s selects %d values, want 1", path, len(vals))
			}
			ts.Setenv(set, rawJSON(vals[0]))
		case count:
			fmt.Fprintln(ts.Stdout(), name, len(vals))
		case named:
			line := name
			for _, v := range vals {
				line += " " + asciiJSON(v)
			}
			fmt.Fprintln(ts.Stdout(), line)
		default:
			for _, v := range vals {
				fmt.Fprintln(ts.Stdout(), rawJSON(v))
			}
		}
	}
}

// selectJSON applies a verify-json PATH to vals.
func selectJSON(vals []any, path string) []any {
	if path == "" || path == "." {
		return vals
	}
	for _, seg := range strings.Split(path, ".") {
		var next []any
		for _, v := range vals {
			switch {
			case seg == "*":
				switch v := v.(type) {
				case []any:
					next = append(next, v...)
				case map[string]any:
					for _, e := range v {
						next = append(next, e)
					}
				}
			case strings.Contains(seg, "="):
				m, _ := v.(map[string]any)
				k, want, _ := strings.Cut(seg, "=")
				if got, ok := m[k]; ok && rawJSON(got) == want {
					next = append(next, v)
				}
			default:
				if m, ok := v.(map[string]any); ok {
					if e, ok := m[seg]; ok {
						next = append(next, e)
					}
				}
			}
		}
		vals = next
	}
	return vals
}

// rawJSON is a string's text, or another value as compact JSON.
func rawJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// asciiJSON is v as compact JSON with every byte outside printable ASCII
// escaped, so that a script's pattern can name it.
func asciiJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	var out strings.Builder
	for _, r := range strings.TrimSuffix(b.String(), "\n") {
		switch {
		case r >= 0x20 && r < 0x7f:
			out.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

func cmdVerifySchema(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: verify-schema SCHEMA FILE")
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(filepath.Join(ts.Getenv("ROOT"), "schemas", args[0]))
	ts.Check(err)
	err = validJSON(sch, ts.ReadFile(args[1]))
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s is not valid under %s: %v", args[1], args[0], err)
	case err == nil && neg:
		ts.Fatalf("%s is valid under %s", args[1], args[0])
	}
}

func cmdVerifyReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: verify-replace IN OUT REGEXP REPLACEMENT")
	}
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	in := ts.ReadFile(args[0])
	if !re.MatchString(in) {
		ts.Fatalf("%s: no match for %s", args[0], args[2])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(re.ReplaceAllString(in, args[3])), 0o644))
}

func cmdVerifyTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-tamper IN OUT")
	}
	var b map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &b))
	env, _ := b["dsseEnvelope"].(map[string]any)
	sigs, _ := env["signatures"].([]any)
	if len(sigs) == 0 {
		ts.Fatalf("%s: no signature", args[0])
	}
	sig := sigs[0].(map[string]any)
	sig["sig"] = "AAAA" + sig["sig"].(string)[4:]
	bad, err := json.Marshal(b)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), bad, 0o644))
}

func cmdVerifyNoRaw(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: verify-noraw")
	}
	for _, f := range []string{"stdout", "stderr"} {
		out := ts.ReadFile(f)
		if !utf8.ValidString(out) {
			ts.Fatalf("%s is not UTF-8", f)
		}
		for i, r := range out {
			if r != '\n' && termtext.Hidden(r) {
				lo, hi := max(0, i-60), min(len(out), i+60)
				ts.Fatalf("%s: %U reaches the terminal raw: %q", f, r, out[lo:hi])
			}
		}
	}
}

func cmdVerifyFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: verify-freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

var substVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func cmdVerifySubst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-subst IN OUT")
	}
	out := substVar.ReplaceAllStringFunc(ts.ReadFile(args[0]), func(m string) string {
		return ts.Getenv(m[2 : len(m)-1])
	})
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o644))
}

func cmdVerifyWideTool(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: verify-widetool FILE")
	}
	b, err := json.Marshal(map[string]any{"tools": []any{wideTool(nil)}})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}

func cmdVerifyDenseList(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: verify-denselist FILE TOOLS WORDS")
	}
	tools, err := strconv.Atoi(args[1])
	ts.Check(err)
	words, err := strconv.Atoi(args[2])
	ts.Check(err)
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range tools {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"dense_%d","inputSchema":{"enum":[`, i)
		for j := range words {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"w_%d_%d"`, i, j)
		}
		b.WriteString("]}}")
	}
	b.WriteString("]}")
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()), 0o644))
}

func cmdVerifyNeedIDPNode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: verify-neednode-idp")
	}
	ts.Check(idpNpm.ensure())
}

func cmdVerifyIDP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: verify-idp")
	}
	ts.Check(idpNpm.ensure())
	iss, stop, err := launchIDP()
	ts.Check(err)
	ts.Defer(stop)
	stateOf(ts).idpStop = stop
	ts.Setenv("IDP_URL", iss)
}

func cmdVerifyIDPStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: verify-idp-stop")
	}
	stop := stateOf(ts).idpStop
	if stop == nil {
		ts.Fatalf("verify-idp-stop: no identity provider started")
	}
	stop()
}

func cmdVerifyIDPToken(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: verify-idp-token CLIENT FILE NAME=VALUE...")
	}
	client := args[0]
	form := url.Values{"grant_type": {"client_credentials"}}
	for _, kv := range args[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("verify-idp-token: %q is not NAME=VALUE", kv)
		}
		if f, ok := strings.CutPrefix(v, "@"); ok {
			v = strings.TrimSpace(ts.ReadFile(f))
		}
		form.Set(k, v)
	}
	req, err := http.NewRequest("POST", ts.Getenv("IDP_URL")+"/token", strings.NewReader(form.Encode()))
	ts.Check(err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		AccessToken string `json:"access_token"`
	}
	json.Unmarshal(b, &r)
	if r.AccessToken == "" {
		ts.Fatalf("token request: %s %s", resp.Status, b)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(r.AccessToken), 0o600))
}

func cmdVerifyJWT(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-jwt JWT OUT")
	}
	parts := strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), ".")
	if len(parts) != 3 {
		ts.Fatalf("%s: not a JWT", args[0])
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), raw, 0o644))
}

func cmdVerifyJoseClaims(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-jose-claims BINDING OUT")
	}
	var binding struct {
		AuthorizationDetails []any `json:"authorization_details"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &binding))
	now := time.Now()
	claims, err := json.Marshal(map[string]any{"iss": "https://idp.example.com", "aud": "urn:etdi", "sub": "acme-ci",
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "scope": "net:fetch", "authorization_details": binding.AuthorizationDetails})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), claims, 0o644))
}

// kmsBuild is the folder of verify-kms, built once per test run and
// linked again only when its sources changed.
var kmsBuild struct {
	once sync.Once
	dir  string
	err  error
}

func cmdVerifyKMS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: verify-kms VAR")
	}
	kmsBuild.once.Do(func() {
		// Kept between runs beside etdiBin: go build -o onto programs
		// that are up to date does not link them again.
		dir := filepath.Join(buildCache(testTmp), "kms")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			kmsBuild.err = err
			return
		}
		for _, b := range [][]string{
			{"-o", filepath.Join(dir, "sigstore-kms-etditest"), "./testdata/kmsplugin"},
			{"-o", filepath.Join(dir, "etdi-kms"), "-tags", "kms", "."},
		} {
			if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
				kmsBuild.err = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
		kmsBuild.dir = dir
	})
	ts.Check(kmsBuild.err)
	ts.Setenv(args[0], kmsBuild.dir)
}

func cmdVerifyECDSAKey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-ecdsakey KEY PUB")
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	keyPEM, err := cryptoutils.MarshalPrivateKeyToPEM(priv)
	ts.Check(err)
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), keyPEM, 0o600))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pubPEM, 0o644))
}

func cmdVerifySigstore(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: verify-sigstore ROOT")
	}
	tb := scriptTB(ts)
	in := sigstoretest.New(tb)
	stateOf(ts).sigstore = in
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), in.TrustedRoot(tb), 0o644))
	ts.Setenv("SIGSTORE_URL", in.URL)
	ts.Setenv("SIGSTORE_TOKEN_URL", in.TokenURL)
	ts.Setenv("SIGSTORE_REQUEST_TOKEN", in.RequestToken)
}

func sigstoreOf(ts *testscript.TestScript) *sigstoretest.Instance {
	in := stateOf(ts).sigstore
	if in == nil {
		ts.Fatalf("no Sigstore instance: verify-sigstore first")
	}
	return in
}

func cmdVerifySigstoreClaims(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-sigstore-claims REPO REF")
	}
	sigstoreOf(ts).GitHubClaims = sigstoretest.GitHubClaims(args[0], args[1], ".github/workflows/release.yml")
}

func cmdVerifySigstoreServed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-sigstore-served TOKENS ENTRIES")
	}
	in := sigstoreOf(ts)
	if got := fmt.Sprint(in.Tokens, " ", in.Entries); got != args[0]+" "+args[1] {
		ts.Fatalf("tokens and entries %s, want %s %s", got, args[0], args[1])
	}
}

func cmdVerifyAttest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: verify-attest DIR OUT")
	}
	in := sigstoreOf(ts)
	dir := ts.MkAbs(args[0])
	pred, err := os.ReadFile(filepath.Join(dir, "predicate.json"))
	ts.Check(err)
	subjects, err := os.ReadFile(filepath.Join(dir, "subjects.txt"))
	ts.Check(err)
	st := map[string]any{"_type": "https://in-toto.io/Statement/v1", "predicateType": "https://etdi.dev/ToolManifest/v1"}
	var pv any
	ts.Check(json.Unmarshal(pred, &pv))
	st["predicate"] = pv
	var subs []any
	for _, line := range strings.Split(strings.TrimSpace(string(subjects)), "\n") {
		digest, name, ok := strings.Cut(line, "  ")
		if !ok {
			ts.Fatalf("subjects.txt line %q", line)
		}
		subs = append(subs, map[string]any{"name": name, "digest": map[string]string{"sha256": digest}})
	}
	st["subject"] = subs
	payload, err := json.MarshalIndent(st, "", "  ")
	ts.Check(err)
	b, err := keyless.Sign(context.Background(), payload, keyless.SignOptions{FulcioURL: in.URL, RekorURL: in.URL, IDToken: in.Token(in.GitHubClaims)})
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}

func cmdVerifyTUF(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: verify-tuf ROOT")
	}
	tb := scriptTB(ts)
	repo := tuftest.New(tb, sigstoreOf(ts).TrustedRoot(tb))
	stateOf(ts).tuf = repo
	path := ts.MkAbs(args[0])
	repo.WriteRoot(tb, filepath.Dir(path), filepath.Base(path))
	ts.Setenv("TUF_URL", repo.URL)
}

func cmdVerifyTUFTamper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: verify-tuf-tamper")
	}
	repo := stateOf(ts).tuf
	if repo == nil {
		ts.Fatalf("no TUF repository: verify-tuf first")
	}
	tb := scriptTB(ts)
	repo.Publish(tb, sigstoretest.New(tb).TrustedRoot(tb))
	repo.TamperTarget(tb, sigstoretest.New(tb).TrustedRoot(tb))
}

// TestVectorScriptCoversEveryVector: verify_vectors.txtar runs every
// directory of testdata/vectors, with the exit code its want.json names.
func TestVectorScriptCoversEveryVector(t *testing.T) {
	script, err := os.ReadFile("testdata/script/verify_vectors.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir("../../testdata/vectors")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("../../testdata/vectors", d.Name(), "want.json"))
		if err != nil {
			t.Fatal(err)
		}
		var w struct{ ExitCode int }
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("cd $VECTORS/%s\nstatus %d etdi verify ", d.Name(), w.ExitCode)
		if !bytes.Contains(script, []byte(want)) {
			t.Errorf("verify_vectors.txtar does not run %s with exit %d", d.Name(), w.ExitCode)
		}
	}
}
