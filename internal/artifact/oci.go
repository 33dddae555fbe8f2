package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/etdi-dev/etdi"
	"github.com/etdi-dev/etdi/internal/artifactsyntax"
)

// inspectTimeout bounds docker image inspect when ctx has no deadline.
const inspectTimeout = 15 * time.Second

// resolveOCI takes the digest of an image from its reference, else from
// the repository digests the local image store records for it.
func resolveOCI(ctx context.Context, p *plan, env environ, dir string) (*Resolved, string) {
	r := p.ref
	if r.digest != "" {
		return &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactOCI, Name: r.name, Version: r.tag, Digest: r.digest}, From: "image reference"}, ""
	}
	prog, why := lookPath(p.prog, &env, dir)
	if why != "" {
		return nil, why + "; pin the image by digest: " + r.name + "@sha256:<digest>"
	}
	name := progName(p.prog)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inspectTimeout)
		defer cancel()
	}
	out, stderr, err := runInspect(ctx, prog, []string{"image", "inspect", "--format", "{{json .RepoDigests}}", r.String()}, env.list())
	switch {
	case ctx.Err() != nil:
		return nil, errf("%s image inspect did not answer in time; pin the image by digest: %s@sha256:<digest>", name, r.name)
	case errors.Is(err, errTooLong):
		return nil, errf("%s image inspect wrote more than %d bytes", name, maxSmall)
	case err != nil:
		reason := firstLine(stderr)
		if reason == "" {
			reason = err.Error()
		}
		return nil, errf("%s image inspect %s failed (%s): the image is not present or the daemon does not answer; "+
			"pull it, or pin it by digest: %s@sha256:<digest>", name, r.String(), reason, r.name)
	}
	var repoDigests []string
	if err := json.Unmarshal(bytes.TrimSpace(out), &repoDigests); err != nil {
		return nil, errf("%s image inspect wrote no list of repository digests: %v", name, err)
	}
	want := canonicalImage(r.name)
	var digests []string
	for _, rd := range repoDigests {
		repo, d, ok := strings.Cut(rd, "@")
		if ok && artifactsyntax.ImageName(repo) && canonicalImage(repo) == want && artifactsyntax.SHA256(d) && !slices.Contains(digests, d) {
			digests = append(digests, d)
		}
	}
	if len(digests) == 0 {
		return nil, errf("the local image %s has no registry digest for %s (built or loaded locally, or pushed elsewhere); "+
			"pull it from the registry, or pin it by digest: %s@sha256:<digest>", r.String(), r.name, r.name)
	}
	return &Resolved{Artifact: etdi.Artifact{Type: etdi.ArtifactOCI, Name: r.name, Version: r.tag, Digest: digests[0]},
		Digests: digests, From: name + " image inspect"}, ""
}

var errTooLong = errors.New("output too long")

// runInspect runs prog with args: stdout bounded to maxSmall bytes,
// stderr to a few lines kept for a message, stdin empty, killed when ctx
// ends. It is a variable for tests.
var runInspect = func(ctx context.Context, prog string, args, env []string) ([]byte, string, error) {
	stdout := &capped{max: maxSmall}
	stderr := &capped{max: 4096}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if stdout.over {
		return nil, "", errTooLong
	}
	return stdout.b.Bytes(), stderr.b.String(), err
}

// capped keeps the first max bytes written to it and notes whether more
// came.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); len(p) > room {
		c.b.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.b.Write(p)
}

// firstLine is the first non-empty line of a command's stderr, printable
// and short, for a message.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.Map(func(r rune) rune {
			if !unicode.IsPrint(r) {
				return -1
			}
			return r
		}, strings.TrimSpace(l))
		if l != "" {
			if len(l) > 160 {
				l = strings.ToValidUTF8(l[:160], "") + "…"
			}
			return l
		}
	}
	return ""
}
