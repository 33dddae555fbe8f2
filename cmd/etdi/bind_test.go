package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// buildWeather puts the in-band example server in dir under name; build
// makes another binary with the same tools. Each build is linked once per
// test binary and copied: a copy is the file a build in dir would have
// written (Go builds are reproducible), so its digest is the same.
func buildWeather(t *testing.T, dir, name, build string) string {
	t.Helper()
	src := weatherBuild(t, build)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// weatherBuilds are the example server's builds of this test binary, by
// build string, in a folder removed when the tests end.
var weatherBuilds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// weatherBuild returns the example server built with build, building it
// on first use.
func weatherBuild(t *testing.T, build string) string {
	t.Helper()
	bin, err := buildWeatherOnce(build)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildWeatherOnce returns the example server built with build, building
// it on first use.
func buildWeatherOnce(build string) (string, error) {
	weatherBuilds.Lock()
	defer weatherBuilds.Unlock()
	if bin, ok := weatherBuilds.bins[build]; ok {
		return bin, nil
	}
	if weatherBuilds.dir == "" {
		// Kept between runs beside etdiBin: go build -o onto a program
		// that is up to date does not link it again.
		dir := filepath.Join(buildCache(testTmp), "weather")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		weatherBuilds.dir, weatherBuilds.bins = dir, map[string]string{}
	}
	bin := filepath.Join(weatherBuilds.dir, "weather-"+hex.EncodeToString([]byte(build)))
	args := []string{"build", "-o", bin}
	if build != "" {
		args = append(args, "-ldflags", "-X main.build="+build)
	}
	if out, err := exec.Command("go", append(args, "../../examples/inband-server")...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build example: %v %s", err, out)
	}
	weatherBuilds.bins[build] = bin
	return bin, nil
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(to) // a running copy stays intact
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
