// Package artifact resolves what the command line of a stdio server is
// about to run, and compares it with the artifacts a signed bundle names
// (server.artifacts): an npm package, a PyPI distribution, an OCI image or
// a file. Resolve reads what is on disk, Match compares, Validate checks an
// artifact as a manifest writes it, and Moving tells, from the command line
// alone, whether it runs something that can change under the same name.
//
// The command line comes from a configuration file and the files read may
// be hostile, so every read is bounded (lockfiles 64 MiB, .npmrc and
// command output 1 MiB, hashed files 2 GiB), files must be regular files
// (a FIFO or device is never opened for a blocking read), nothing is
// fetched from the network, and the only program ever run is the container
// CLI of the command line itself, for "image inspect", with a timeout. An
// artifact that cannot be told without guessing is an *UnresolvedError
// that says what to pin.
//
// # Resolution rules
//
// The command line is parsed as its launcher would. The base name of the
// first argument, without a Windows .exe, .cmd or .bat, decides:
//
//  1. env [-i] [-u NAME] [-C DIR] [NAME=VALUE...] PROGRAM ARGS: PROGRAM
//     ARGS are resolved with the environment and directory env gives them.
//     env -S and unknown env options are not resolved.
//
//  2. npm package runners: npx, npm exec, npm x, bunx, bun x, pnpx, pnpm
//     dlx, yarn dlx. The package is the value of -p/--package (once), else
//     the first argument that is neither a flag nor a flag's value; a long
//     flag not known to take no value takes the next argument. The spec is
//     name, name@version, @scope/name@version, each optionally prefixed
//     with "npm:". Git, URL, file, path and jsr: specs are not resolved,
//     nor a range or tag (pkg@^1, pkg@latest): npm asks the registry what
//     those mean. Then, in order:
//
//     a. the project's lockfile: from the working directory up, the
//     nearest directory holding package.json or node_modules is the
//     project (npm's local prefix; the working directory if none is); its
//     lockfile's entry packages["node_modules/<name>"] (lockfileVersion 2
//     and 3; dependencies[name] in version 1) gives version and integrity.
//     An entry at another version than an exact one asked for, or no entry,
//     passes on to b. A package in node_modules that the lockfile does not
//     record, a linked package, or an entry without a SHA-2 integrity is
//     not resolved.
//
//     b. for npx and npm exec only, the npx cache: each
//     <cache>/_npx/<hash> whose lockfile's root package depends on the
//     package directly (the entry npx made for it) and holds
//     node_modules/<name>, at the exact version if one is asked for. The
//     cache is npm's default, ~/.npm (%LocalAppData%\npm-cache on
//     Windows): a cache set anywhere else leaves the launch unresolved
//     (rule 7), as is a HOME inside the project other than the account's
//     own home. Entries holding different versions, when no exact version
//     is asked for, are not resolved (npx would ask the registry which
//     version is latest), nor entries that disagree on the integrity of
//     one version.
//
//     For npx and npm exec, what npm exec starts before it looks for the
//     package (a bin of the project's package.json, a node_modules/.bin
//     program of the command's name from the project up, one in npm's
//     global bin directory) and the bin it starts for the package (looked
//     up in each node_modules/.bin from the working directory up) must be
//     files of the package installed in the project's node_modules, and
//     no node_modules/.bin/sh or node may stand in for the shell or
//     for the node the package's program runs on. On POSIX systems the
//     runner the launch's PATH finds must be npm's own script, the first
//     node on it the one npm is installed with, the first sh the system's
//     /bin/sh, and no variable named PATH in another case may be set.
//     On Windows,
//     where npm runs that bin through a command shim, an installed
//     package is not resolved.
//
//     bunx and bun x read only the project's lockfile (b is npm's cache,
//     not bun's). pnpm dlx, pnpx and yarn dlx install from the registry at
//     every start, with nothing on disk recording what they get, and are
//     not resolved. The artifact is {npm, name, version, integrity}, with
//     every sha512, sha384 and sha256 hash of the integrity string in
//     Resolved.Digests, strongest first.
//
//  3. Python package runners: uvx, uv tool run, pipx run. The package is
//     the value of --from (uvx) or --spec (pipx), else the first plain
//     argument, read as name, name==X, name===X or name[extras]==X (and
//     name@X for uv). It must name one exact version: these runners
//     resolve anything else against the index. The nearest uv.lock from the
//     working directory up must record the distribution ([[package]] with
//     the PEP 503 normalized name and the version, PEP 440 zero padding
//     aside) with sha256 file hashes; its sdist hash is Artifact.Digest,
//     and every file hash of that version (sdist, then wheels) is in
//     Resolved.Digests: the runner installs whichever file fits the
//     platform. uv run SCRIPT.py (with --directory) resolves the script as
//     in rule 5; other uv and pipx commands are not resolved.
//
//  4. Containers: docker, podman or nerdctl [container] run [flags] IMAGE,
//     flags read as docker run has them (a flag's value is never the
//     image). IMAGE@sha256:<hex> is resolved from the reference alone,
//     running nothing. Otherwise, unless global options precede run (they
//     may choose another daemon) or --pull is always or newer (the tag is
//     fetched again), the same CLI, found on the launch's PATH, runs
//     "image inspect --format {{json .RepoDigests}} IMAGE" with the
//     launch's environment and a timeout (ctx's, or 15 s); the digests of
//     the entries whose repository is the image's (docker.io/library/x is
//     x) are the artifact's, the first in Artifact.Digest. An image that is
//     absent, has no such entry or cannot be inspected is not resolved. The
//     artifact is {oci, name without tag or digest, tag, sha256:<hex>}.
//
//  5. Interpreters running a script: node, nodejs, tsx, ts-node, deno run
//     (or deno FILE.ts), bun [run], python, python3, pythonX.Y, py, sh,
//     bash, dash, zsh, ksh, java -jar. The script is the first argument
//     after the interpreter's flags, relative to the working directory; it
//     must be a regular file (not a directory node or python would resolve
//     to a module). Code given on the command line or standard input (node
//     -e, python -c, sh -c), python -m, a URL and npm:/jsr: specifiers are
//     not resolved. The artifact is {file, base name, "", sha256} of the
//     file after symbolic links.
//
//  6. Otherwise the program itself, found as exec.LookPath finds it but
//     with the launch's PATH (and PATHEXT) and directory: a name with a
//     directory separator is relative to the working directory; a PATH
//     entry that is not absolute is never searched (if the program is there
//     the lookup fails, as Go's ErrDot does). Symbolic links are followed;
//     the file must be a regular file of 1 byte to 2 GiB. The artifact is
//     {file, base name of the file, "", sha256}. Programs that run another
//     program or a command string (sudo, nohup, timeout, cmd, powershell,
//     npm run, uv run of a project command, ...) are not resolved rather
//     than taken for the server.
//
//  7. The runner's configuration. npm's (command-line options,
//     npm_config_* in any case, every .npmrc npm may read: the project's,
//     the user's, the global and the builtin one), bunx's (BUN_*,
//     bunfig.toml, .env), uv's (UV_*, uv.toml, pyproject.toml [tool.uv]),
//     pipx's (PIPX_*, PIP_*, pip.conf) and the container CLIs' (global
//     options, DOCKER_* and the like, docker's current context) are read
//     where the tool reads them. A setting not on the tool's allow-list of
//     harmless ones (config.go) leaves the launch unresolved, naming the
//     file or variable and the setting, never its value: script-shell,
//     node-options, a registry, a cache, another configuration file, an
//     index, a daemon can each swap what runs under the genuine name.
//
// A resolved artifact must pass Validate: a lockfile or image store that
// gives a name or version no manifest could hold gives no answer.
//
// The environment is the launch's Env; os.Getenv is read only when Env is
// nil.
//
// # What is not resolved
//
// What a resolved artifact loads in turn is not covered: an npm package's
// dependencies, a script's imports and preloads (node -r), volumes mounted
// into a container, plugins. Caches other than npm's npx cache are not
// read. Lockfiles are taken as the record of what is installed: an edited
// node_modules/<name>, or a uv.lock whose files the index no longer
// serves, is not detected. uvx and pipx do not read uv.lock themselves: a pinned
// version matches the files uv.lock records for it.
package artifact
