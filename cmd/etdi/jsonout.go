package main

import (
	"time"

	"github.com/etdi-dev/etdi/verify"
)

// jsonSchemaVersion is the "schemaVersion" of every JSON output that has
// one (check, verify, pin list). It goes up only when a member is removed
// or renamed or changes its type or meaning; new members do not change it
// (docs/output.md#sarif-and-json-output). The shapes are published in schemas/.
const jsonSchemaVersion = 1

// verifyOutput is etdi verify --json (schemas/verify.schema.json).
type verifyOutput struct {
	SchemaVersion int `json:"schemaVersion"`
	*verify.Result
	OK       bool   `json:"ok"`
	Headline string `json:"headline"`
	ExitCode int    `json:"exitCode"`
}

// pinListOutput is etdi pin list --json (schemas/pin-list.schema.json).
type pinListOutput struct {
	SchemaVersion int      `json:"schemaVersion"`
	Pins          []pinRow `json:"pins"`
}

// pinRow is one pin of etdi pin list.
type pinRow struct {
	Ref         string           `json:"ref"`
	Version     string           `json:"version,omitempty"`
	Digest      string           `json:"digest"`
	Signer      string           `json:"signer"`
	ApprovedBy  string           `json:"approvedBy"`
	ApprovedAt  time.Time        `json:"approvedAt"`
	Revoked     bool             `json:"revoked"`
	Revocations []revocationView `json:"revocations"`
	// Variants are the approved definitions of the item, oldest first,
	// when there is more than one (docs/storage.md#approved-variants); the pin's own members
	// are the latest of them.
	Variants []variantRow `json:"variants,omitempty"`
}

// variantRow is one approved definition of an item with several.
type variantRow struct {
	Version    string    `json:"version,omitempty"`
	Digest     string    `json:"digest"`
	ApprovedBy string    `json:"approvedBy"`
	ApprovedAt time.Time `json:"approvedAt"`
	Served     string    `json:"served,omitempty"`
	Revoked    bool      `json:"revoked"`
}
