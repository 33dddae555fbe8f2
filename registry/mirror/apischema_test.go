package mirror_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/etdi-dev/etdi/internal/registrytest"
	"github.com/etdi-dev/etdi/registry/mirror"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// apiSchemas are the schemas of the registry API's answers, from two
// documents of the real registry: the OpenAPI document the running
// registry serves (/openapi.json), and the generic registry API's
// published document (docs/reference/api/openapi.yaml of the registry's
// module), which other registries implement.
//
// The served document closes the entry's _meta to the registry's own
// member; the published one leaves it open ("additionalProperties: true")
// for other registries' metadata, such as etdi's verdict. So an answer is
// checked whole against the published document, and without the verdict
// against the served one: apart from the verdict, it is exactly what the
// official registry would answer.
type apiSchemas struct {
	servedList, servedEntry, servedError *jsonschema.Schema
	publishedList, publishedEntry        *jsonschema.Schema
}

var (
	schemasOnce sync.Once
	schemas     *apiSchemas
	schemasErr  error
)

func loadSchemas(t *testing.T, reg *registrytest.Registry) *apiSchemas {
	t.Helper()
	schemasOnce.Do(func() { schemas, schemasErr = compileSchemas(reg) })
	if schemasErr != nil {
		t.Fatal(schemasErr)
	}
	return schemas
}

func compileSchemas(reg *registrytest.Registry) (*apiSchemas, error) {
	served, err := reg.OpenAPI(context.Background())
	if err != nil {
		return nil, fmt.Errorf("served OpenAPI document: %w", err)
	}
	servedDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(served))
	if err != nil {
		return nil, err
	}
	published, err := publishedOpenAPI()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("https://registry.test/served.json", servedDoc); err != nil {
		return nil, err
	}
	if err := c.AddResource("https://registry.test/published.json", published); err != nil {
		return nil, err
	}
	var s apiSchemas
	for _, x := range []struct {
		dst **jsonschema.Schema
		ref string
	}{
		{&s.servedList, "https://registry.test/served.json#/components/schemas/ServerListResponse"},
		{&s.servedEntry, "https://registry.test/served.json#/components/schemas/ServerResponse"},
		{&s.servedError, "https://registry.test/served.json#/components/schemas/ErrorModel"},
		{&s.publishedList, "https://registry.test/published.json#/components/schemas/ServerList"},
		{&s.publishedEntry, "https://registry.test/published.json#/components/schemas/ServerResponse"},
	} {
		if *x.dst, err = c.Compile(x.ref); err != nil {
			return nil, fmt.Errorf("compiling %s: %w", x.ref, err)
		}
	}
	return &s, nil
}

// publishedOpenAPI reads the registry module's published OpenAPI document
// (YAML) as JSON values, from the module testdata/registry pins.
func publishedOpenAPI() (any, error) {
	dir, err := registrytest.SourceDir()
	if err != nil {
		return nil, fmt.Errorf("locating the registry module: %w", err)
	}
	y, err := os.ReadFile(filepath.Join(dir, "docs", "reference", "api", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	var doc any
	if err := yaml.Unmarshal(y, &doc); err != nil {
		return nil, err
	}
	// Through JSON, so that the values are the ones a JSON document has.
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(j))
}

// checkList validates a listing answer (ServerListResponse).
func (s *apiSchemas) checkList(t *testing.T, body []byte) {
	t.Helper()
	s.check(t, body, s.publishedList, s.servedList, func(v map[string]any) {
		for _, e := range v["servers"].([]any) {
			stripVerdict(t, e)
		}
	})
}

// checkEntry validates one entry's answer (ServerResponse).
func (s *apiSchemas) checkEntry(t *testing.T, body []byte) {
	t.Helper()
	s.check(t, body, s.publishedEntry, s.servedEntry, func(v map[string]any) { stripVerdict(t, v) })
}

// checkError validates a problem answer (ErrorModel).
func (s *apiSchemas) checkError(t *testing.T, body []byte) {
	t.Helper()
	s.check(t, body, nil, s.servedError, func(map[string]any) {})
}

func (s *apiSchemas) check(t *testing.T, body []byte, published, served *jsonschema.Schema, strip func(map[string]any)) {
	t.Helper()
	if published != nil {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("answer is not JSON: %v\n%s", err, body)
		}
		if err := published.Validate(v); err != nil {
			t.Fatalf("answer does not follow the published OpenAPI document: %v\n%s", err, body)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("answer is not an object: %s", body)
	}
	strip(m)
	if err := served.Validate(m); err != nil {
		t.Fatalf("answer (without etdi's verdict) does not follow the registry's served OpenAPI document: %v\n%s", err, body)
	}
}

// stripVerdict removes etdi's verdict from an entry, failing when it has
// none.
func stripVerdict(t *testing.T, e any) {
	t.Helper()
	meta, _ := e.(map[string]any)["_meta"].(map[string]any)
	if _, ok := meta[mirror.VerdictKey]; !ok {
		t.Fatalf("served entry without %s: %v", mirror.VerdictKey, e)
	}
	delete(meta, mirror.VerdictKey)
}
