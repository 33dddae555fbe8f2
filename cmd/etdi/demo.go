package main

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

//go:embed demodata
var demoFiles embed.FS

// demoStep is one etdi command of the demo and the exit code it must give.
type demoStep struct {
	say  string
	args []string
	want int
	env  map[string]string
}

func (e *env) demoCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a built-in example: sign, verify, approve, then catch a rug pull and an impersonation",
		Long: `Run the whole ETDI flow on a built-in weather server example, with real
keys, files and signatures in a working directory (a new temporary one
unless --dir is given): a provider generates a key and signs its manifest,
a client trusts the key, verifies the bundle and the live tools, checks
them against its pin database and approves them; then the server changes a
tool description and schema while keeping version 1.0.0 (rug pull, exit 11),
the security team verifies the audit history, and an attacker signs the
same manifest with a key trusted only for another provider (impersonation,
exit 12).

The demo succeeds (exit 0) only if every step gives the expected exit code.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "etdi-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			for _, name := range []string{"weather.manifest.json", "live-ok.json", "live-rugpull.json"} {
				b, err := demoFiles.ReadFile("demodata/" + name)
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					return err
				}
			}
			p := func(name string) string { return filepath.Join(dir, name) }
			pw := map[string]string{"ETDI_PASSWORD": "demo-password-not-secret"}
			steps := []demoStep{
				{say: "provider: generate a key pair", args: []string{"key", "generate", "--out", p("acme")}, env: pw},
				{say: "provider: sign the manifest in CI", args: []string{"sign", "--key", p("acme.key"), "--out", p("weather.etdi.json"), p("weather.manifest.json")}, env: pw},
				{say: "client: trust acme's public key", args: []string{"trust", "add", "--trust", p("trust.json"), "--provider", "acme", "--key", p("acme.pub")}},
				{say: "client: verify the bundle and the live tools (keys reordered: still a match)", args: []string{"verify", "--trust", p("trust.json"), "--tools", p("live-ok.json"), p("weather.etdi.json")}},
				{say: "client: check against the pin database: nothing approved yet", args: []string{"check", "--trust", p("trust.json"), "--pins", p("pins.db"), "--bundle", p("weather.etdi.json"), "--tools", p("live-ok.json")}, want: exitApproval},
				{say: "client: approve what was reviewed", args: []string{"pin", "approve", "--trust", p("trust.json"), "--pins", p("pins.db"), "--bundle", p("weather.etdi.json"), "--tools", p("live-ok.json"), "--by", "demo"}},
				{say: "client: the same check now passes", args: []string{"check", "--trust", p("trust.json"), "--pins", p("pins.db"), "--bundle", p("weather.etdi.json"), "--tools", p("live-ok.json")}},
				{say: "attack: the server changes get_weather but still calls it 1.0.0", args: []string{"check", "--trust", p("trust.json"), "--pins", p("pins.db"), "--bundle", p("weather.etdi.json"), "--tools", p("live-rugpull.json")}, want: exitRugPull},
				{say: "security team: the history of approvals and findings is intact", args: []string{"audit", "verify", "--pins", p("pins.db")}},
				{say: "attacker: a key the client trusts for another provider", args: []string{"key", "generate", "--out", p("evil")}, env: pw},
				{say: "client: trusts 'evil' for its own tools", args: []string{"trust", "add", "--trust", p("trust.json"), "--provider", "evil", "--key", p("evil.pub")}},
				{say: "attack: evil signs a manifest claiming to be acme", args: []string{"sign", "--key", p("evil.key"), "--out", p("impostor.etdi.json"), p("weather.manifest.json")}, env: pw},
				{say: "client: verify the impostor bundle", args: []string{"verify", "--trust", p("trust.json"), p("impostor.etdi.json")}, want: exitImpersonation},
			}
			failed := 0
			for i, s := range steps {
				fmt.Fprintf(e.stdout, "\n== %d. %s\n$ etdi %s\n", i+1, s.say, strings.Join(shorten(s.args, dir), " "))
				var out bytes.Buffer
				sub := &env{ctx: e.ctx, stdin: bytes.NewReader(nil), stdout: &out, stderr: &out,
					lookupEnv: func(k string) (string, bool) { v, ok := s.env[k]; return v, ok }}
				code := sub.run(s.args)
				fmt.Fprint(e.stdout, indent(strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "")))
				verdict := "as expected"
				if code != s.want {
					verdict = fmt.Sprintf("UNEXPECTED, wanted %d", s.want)
					failed++
				}
				fmt.Fprintf(e.stdout, "-> exit %d (%s)\n", code, verdict)
			}
			if failed > 0 {
				return fmt.Errorf("demo: %d step(s) did not give the expected exit code", failed)
			}
			fmt.Fprintln(e.stdout, "\ndemo: the signed tools verified, the rug pull (exit 11) and the impersonation (exit 12) were caught")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "working directory to keep the demo files in (default: a temporary one, removed afterwards)")
	return cmd
}

func shorten(args []string, dir string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.TrimPrefix(a, dir+string(filepath.Separator))
	}
	return out
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "   " + strings.Join(lines, "\n   ") + "\n"
}
