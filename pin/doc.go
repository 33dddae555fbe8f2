// Package pin is the client's pin database: what a person approved (tool,
// version, definition digest, signer, permissions) and the tamper-evident
// history of every approval, revocation and finding (docs/storage.md).
//
// The database is one bbolt file, mode 0600. Each logical write is one
// transaction, so a process killed mid-write leaves the database as it was
// before or after that write. The file lock is taken with a timeout: a
// second process waits, then fails with [ErrLocked] instead of hanging.
//
// # Bucket tree
//
//	meta/
//	    schema      uint64, big endian: the schema version (see migrations)
//	    id          16 random bytes, hex: names this database in checkpoints
//	    logSize     uint64, big endian: number of records in log/records
//	servers/
//	    <server key>           JSON ServerInfo: identity, provider, highest
//	                           sequence; e.g. "acme:weather"
//	pins/
//	    <server key> 0x00 <tool name>   JSON Pin: approved definition and
//	                                    evidence; (schema 3) the index and
//	                                    leaf hash of its approval record;
//	                                    "variants": the earlier approved
//	                                    definitions kept beside it, each
//	                                    bound to its own record (
//	                                    docs/storage.md#approved-variants; absent when there is one)
//	    <server key> 0x00 0x01 <item> 0x00 <name>
//	                                    (schema 5) JSON Pin of a prompt,
//	                                    resource or resource template
//	revoked/
//	    <server key> "/" <tool> ["@" <version>]   JSON Revocation, bound to
//	    "key:" <key id>                           its record like a pin
//	    <server key> "/" <item key> 0x00 <digest> one approved definition
//	                                              (the item key is what
//	                                              follows the server's NUL
//	                                              in its pin key)
//	names/                     (schema 2) index for shadowing checks
//	    <tool name>            JSON []string: server keys that pin the name
//	skeletons/                 (schema 2; rebuilt in 3) index for look-alike names
//	    <skeleton>             JSON []string: pinned names with that skeleton
//	spools/                    (schema 5; created on first use) call spools
//	    <spool id>             uint64 big endian: last sequence number of
//	                           the spool appended to the history (etdi run
//	                           --audit-calls)
//	launches/                  (created on first use) project-scoped host
//	    <launch digest>        config entries the user let etdi start: JSON
//	                           Launch, bound to its "launch" record
//	log/
//	    records/
//	        <index>            uint64 big endian -> JSON Record (one line)
//	    hashes/
//	        <storage index>    uint64 big endian -> 32-byte tlog hash
//
// Values are copied out of their transaction before use.
//
// # Pins bound to the history
//
// Each pin and revocation names the history record that created it
// ([Binding]). Every read checks the record, its leaf hash and its content,
// and each comparison replays the records about the server to refuse a
// pin or revocation that a later record replaced or that was deleted
// ([*UnjustifiedError]). Damaged values are a [*CorruptError], never absent.
// VerifyPins replays the whole history; Audit, for audit verify, also
// recomputes it, in the same pass over the records, decoding and hashing
// on every CPU.
//
// # Server identity
//
// A server key never contains secrets: it is "<provider id>:<server name>"
// for servers with a verified bundle, and "unsigned:<name>" for servers
// without one, where name is what the user (or, later, a host config entry)
// calls the server. Never environment values, tokens or command lines.
//
// # History
//
// log/records is an append-only Merkle log with RFC 6962 hashing
// ([golang.org/x/mod/sumdb/tlog]): leaf i is the
// [golang.org/x/mod/sumdb/tlog.RecordHash] of record i, and log/hashes
// holds the stored hashes [golang.org/x/mod/sumdb/tlog.StoredHashes]
// computes. Each
// record also carries the tree hash of the log before it ("prev"), so a
// rewrite that recomputes the hashes is still pinned to a record number.
// Check appends a finding only if the history does not already hold the
// same finding since the last decision about its tool (unrecorded); it
// never rewrites a record. [Store.AppendCalls] appends the call records of a
// gate in batches; a call record is neither a finding nor a decision, and
// every scan of the history skips it undecoded.
// Checkpoints ("<origin>\n<size>\n<base64 root>\n", C2SP tlog-checkpoint)
// are signed notes (golang.org/x/mod/sumdb/note) by a local audit key.
package pin
