package audit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/etdi-dev/etdi/registry"
	"github.com/etdi-dev/etdi/registry/audit"
	"github.com/etdi-dev/etdi/trust"
)

// An organisation's audit of its registry in a Go program: the verdict of
// every entry, and the exit code etdi registry audit would set.
func Example() {
	policy, err := trust.Load("trust.json")
	if err != nil {
		log.Fatal(err)
	}
	client, err := registry.NewClient("https://registry.example.com")
	if err != nil {
		log.Fatal(err)
	}
	a, err := audit.New(audit.Options{Trust: policy, Pins: "team.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	sum, err := a.Audit(context.Background(), client, registry.ListOptions{}, audit.DefaultConcurrency, func(v audit.Verdict) error {
		if !v.Pass() {
			fmt.Printf("%s %s: %s (exit %d)\n", v.Name, v.Version, v.Status, v.ExitCode)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.String(), "exit", sum.ExitCode())
}
