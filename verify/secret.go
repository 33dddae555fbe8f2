package verify

// SecretInDefinition: a server shows the model a secret it is configured
// with (an env or header value, URL credentials, a credential argument) in
// a tool definition, its instructions or its tools/list _meta (error,
// SPEC.md §14). The definition is not compared, approved or recorded, and
// the finding never carries the secret: only where it is configured.
const SecretInDefinition Kind = "secret_in_definition"
