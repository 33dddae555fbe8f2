package trust

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/keys"
)

// keyedProvider is a provider document of acme with one key and members.
func keyedProvider(t *testing.T, members string) string {
	t.Helper()
	k := newKey(t)
	id, _ := keys.ID(k.PublicKey)
	pemText, err := keys.MarshalPublicKey(k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	prov := `{"id": "acme", "keys": [{"id": "` + id + `", "publicKey": ` + strconv.Quote(string(pemText)) + `}]`
	if members != "" {
		prov += ", " + members
	}
	return `{"version": 1, "providers": [` + prov + `}]}`
}

// TestRegistryNamespacesRoundTrip: a provider's registry namespaces are
// read in their order and written back unchanged.
func TestRegistryNamespacesRoundTrip(t *testing.T) {
	doc := keyedProvider(t, `"registryNamespaces": ["io.github.acme", "com.acme.mcp"]`)
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Provider("acme").RegistryNamespaces; strings.Join(got, " ") != "io.github.acme com.acme.mcp" {
		t.Fatalf("namespaces %q", got)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\"registryNamespaces\": [\n        \"io.github.acme\",\n        \"com.acme.mcp\"\n      ]") {
		t.Fatalf("marshalled:\n%s", b)
	}
	q, err := Parse(b)
	if err != nil || strings.Join(q.Provider("acme").RegistryNamespaces, " ") != "io.github.acme com.acme.mcp" {
		t.Fatalf("round trip: %v %+v", err, q)
	}
	// Without the member nothing is written: a policy without namespaces
	// reads in an etdi that knows none.
	p.Provider("acme").RegistryNamespaces = nil
	if b, _ := p.Marshal(); strings.Contains(string(b), "registryNamespaces") {
		t.Fatalf("an empty list was written:\n%s", b)
	}
}

// TestRegistryNamespacesRejected: a bad namespace in the policy is an
// error naming the member, never a namespace that covers nothing.
func TestRegistryNamespacesRejected(t *testing.T) {
	many := make([]string, MaxRegistryNamespaces+1)
	for i := range many {
		many[i] = strconv.Quote(fmt.Sprintf("com.acme%d", i))
	}
	for _, tc := range []struct{ name, list, want string }{
		{"empty list", `[]`, "must list 1 to 64 registry namespaces"},
		{"too many", "[" + strings.Join(many, ",") + "]", "must list 1 to 64 registry namespaces"},
		{"not an array", `"io.github.acme"`, "providers[0].registryNamespaces"},
		{"not a string", `[1]`, "providers[0].registryNamespaces[0]"},
		{"empty", `[""]`, "empty registry namespace"},
		{"a server name", `["io.github.acme/weather"]`, "give the namespace (io.github.acme), not a server name"},
		{"no dot", `["acme"]`, `registry namespace "acme" has no dot`},
		{"leading dot", `[".acme.com"]`, "begins or ends with '.' or '-'"},
		{"trailing dot", `["com.acme."]`, "begins or ends with '.' or '-'"},
		{"leading dash", `["-com.acme"]`, "begins or ends with '.' or '-'"},
		{"trailing dash", `["com.acme-"]`, "begins or ends with '.' or '-'"},
		{"empty label", `["com..acme"]`, "has an empty label"},
		{"underscore", `["com.ac_me"]`, "only ASCII letters, digits, '.' and '-'"},
		{"space", `["com.acme "]`, "only ASCII letters, digits, '.' and '-'"},
		{"non-ASCII", `["com.аcme"]`, "only ASCII letters, digits, '.' and '-'"},
		{"too long", `["com.` + strings.Repeat("a", 197) + `"]`, "longer than 200 bytes"},
		{"twice", `["io.github.acme", "com.acme", "io.github.acme"]`, `providers[0].registryNamespaces[2]: registry namespace "io.github.acme" listed twice`},
		{"twice in another case", `["io.github.acme", "IO.GitHub.ACME"]`, `registry namespace "IO.GitHub.ACME" listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(keyedProvider(t, `"registryNamespaces": `+tc.list)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not contain %q", err, tc.want)
			}
		})
	}
	// The longest namespace and the most of them are accepted.
	long := `["com.` + strings.Repeat("a", 196) + `"]`
	if _, err := Parse([]byte(keyedProvider(t, `"registryNamespaces": `+long))); err != nil {
		t.Errorf("a namespace of 200 bytes: %v", err)
	}
	if _, err := Parse([]byte(keyedProvider(t, `"registryNamespaces": [`+strings.Join(many[:MaxRegistryNamespaces], ",")+"]"))); err != nil {
		t.Errorf("64 namespaces: %v", err)
	}
	// Namespaces alone sign nothing: the provider still needs a signer.
	doc := `{"version": 1, "providers": [{"id": "acme", "registryNamespaces": ["io.github.acme"]}]}`
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), "providers[0].keys: required field is missing") {
		t.Errorf("a provider of namespaces alone: %v", err)
	}
	// A misspelt member is refused, naming the new one among the allowed.
	_, err := Parse([]byte(keyedProvider(t, `"registryNamespace": ["io.github.acme"]`)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "registryNamespace" (allowed: id, keys, sigstore, idp, require, registryNamespaces)`) {
		t.Errorf("misspelt member: %v", err)
	}
}

// TestCoversRegistryName: a namespace covers the names in it, exactly:
// not a longer namespace that begins with it, not another owner; a
// GitHub owner in any case.
func TestCoversRegistryName(t *testing.T) {
	prov := &Provider{ID: "acme", RegistryNamespaces: []string{"io.github.acme", "com.acme"}}
	for name, want := range map[string]bool{
		"io.github.acme/weather":      true,
		"io.github.Acme/weather":      true, // GitHub owners are case-insensitive
		"IO.GITHUB.ACME/weather":      true,
		"com.acme/weather":            true,
		"com.acme.evil/weather":       false, // a namespace is not a prefix
		"com.acm/weather":             false,
		"COM.acme/weather":            false, // other namespaces compare exactly
		"io.github.acme-evil/weather": false,
		"io.github.evil/weather":      false,
		"io.github.acme.evil/weather": false,
		"io.github/acme":              false,
		"weather":                     false, // no namespace
		"":                            false,
	} {
		if got := prov.CoversRegistryName(name); got != want {
			t.Errorf("CoversRegistryName(%q) = %v, want %v", name, got, want)
		}
	}
	// A provider without namespaces keeps today's behaviour: any name.
	if !(&Provider{ID: "acme"}).CoversRegistryName("io.github.evil/x") {
		t.Error("a provider without namespaces refuses a name")
	}
}

func TestSameRegistryName(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"io.github.acme/weather", "io.github.acme/weather", true},
		{"io.github.acme/weather", "io.github.ACME/weather", true},
		{"io.github.acme/weather", "io.github.acme/Weather", false}, // the name itself compares exactly
		{"io.github.acme/weather", "io.github.evil/weather", false},
		{"com.acme/weather", "com.Acme/weather", false},
		{"com.acme/weather", "com.acme/weather2", false},
		{"io.github.acme/weather", "io.github.acme", false},
	} {
		if got := etdi.SameRegistryName(tc.a, tc.b); got != tc.want {
			t.Errorf("etdi.SameRegistryName(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestGitHubIdentityOf(t *testing.T) {
	for id, want := range map[string]bool{
		"https://github.com/acme/weather/.github/workflows/release.yml@refs/tags/v1": true,
		"https://github.com/ACME/weather/.github/workflows/release.yml@refs/tags/v1": true,
		"https://github.com/acme-evil/weather/.github/workflows/r.yml@refs/tags/v1":  false,
		"https://github.com/evil/acme/.github/workflows/release.yml@refs/tags/v1":    false,
		"https://github.com/acme":                            false, // no workflow in it
		"https://github.com.evil.example/acme/weather/x.yml": false,
		"https://evil.example/acme/weather/x.yml":            false,
		"http://github.com/acme/weather/x.yml":               false,
		"acme@example.com":                                   false,
		"https://github.com/acme\u212a/weather/x.yml":        false, // a Kelvin sign is no k
	} {
		if got := etdi.GitHubIdentityOf(id, "acme"); got != want {
			t.Errorf("etdi.GitHubIdentityOf(%q, acme) = %v, want %v", id, got, want)
		}
	}
	if etdi.GitHubIdentityOf("https://github.com/acmK/x/y", "acm\u212a") {
		t.Error("a Kelvin sign in the owner folds")
	}
}

// TestAddRegistryNamespaces: namespaces extend a trusted provider, once
// each; a provider not trusted yet and a bad namespace are refused with
// the policy unchanged.
func TestAddRegistryNamespaces(t *testing.T) {
	p := New()
	if _, err := p.AddRegistryNamespaces("acme", "io.github.acme"); err == nil || !strings.Contains(err.Error(), `provider "acme" is not in the policy`) {
		t.Fatalf("namespaces of an unknown provider: %v", err)
	}
	if len(p.Providers) != 0 {
		t.Fatal("a refused namespace created a provider")
	}
	if _, err := p.AddKey("acme", newKey(t)); err != nil {
		t.Fatal(err)
	}
	added, err := p.AddRegistryNamespaces("acme", "io.github.acme", "com.acme")
	if err != nil || strings.Join(added, " ") != "io.github.acme com.acme" {
		t.Fatalf("added %q, %v", added, err)
	}
	added, err = p.AddRegistryNamespaces("acme", "io.github.ACME", "com.acme.mcp")
	if err != nil || strings.Join(added, " ") != "com.acme.mcp" {
		t.Fatalf("added %q, %v", added, err)
	}
	if _, err := p.AddRegistryNamespaces("acme", "io.github.other", "bad"); err == nil || !strings.Contains(err.Error(), "has no dot") {
		t.Fatalf("a bad namespace: %v", err)
	}
	var many []string
	for i := range MaxRegistryNamespaces {
		many = append(many, fmt.Sprintf("com.other%d", i))
	}
	if _, err := p.AddRegistryNamespaces("acme", many...); err == nil || !strings.Contains(err.Error(), "more than 64") {
		t.Fatalf("65 namespaces: %v", err)
	}
	if got := p.Provider("acme").RegistryNamespaces; strings.Join(got, " ") != "io.github.acme com.acme com.acme.mcp" {
		t.Fatalf("a refused call changed the namespaces: %q", got)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	// Removing a key leaves the namespaces; removing the provider, all.
	if err := p.Remove("acme", ""); err != nil || p.Provider("acme") != nil {
		t.Fatal("provider not removed", err)
	}
}
