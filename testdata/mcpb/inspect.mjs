// inspect.mjs FILE: reads an MCPB file's signature block with mcpb's own
// extractSignatureBlock and node-forge, as mcpb verify does, and prints
// one JSON line: whether a block is present, the signing certificate's
// SHA-256 fingerprint and common names, and whether the block's
// messageDigest attribute equals the SHA-256 of the content before it.
//
// mcpb verify itself cannot be asked: node-forge has no PKCS#7 signature
// verification (its verify() throws), so mcpb verify reports every signed
// file as unsigned. This script runs the steps of mcpb verify that work.
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import forge from "node-forge";
import { extractSignatureBlock } from "@anthropic-ai/mcpb/node";

const data = readFileSync(process.argv[2]);
const { originalContent, pkcs7Signature } = extractSignatureBlock(data);
if (!pkcs7Signature) {
  console.log(JSON.stringify({ signed: false }));
  process.exit(0);
}
const p7 = forge.pkcs7.messageFromAsn1(forge.asn1.fromDer(pkcs7Signature.toString("binary")));
const cert = p7.certificates[0];
const fingerprint = forge.md.sha256.create()
  .update(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes()).digest().toHex();
let messageDigest = null;
// forge keeps the parsed signer infos' attributes in rawCapture
const infos = p7.rawCapture?.signerInfos ?? [];
const digest = createHash("sha256").update(originalContent).digest("binary");
let digestMatches = false;
const walk = (node) => {
  if (!node || typeof node !== "object") return;
  if (Array.isArray(node.value)) {
    // an Attribute: SEQUENCE { OID, SET { value } }
    if (node.value.length === 2 && node.value[0].type === forge.asn1.Type.OID &&
        forge.asn1.derToOid(node.value[0].value) === forge.pki.oids.messageDigest) {
      messageDigest = node.value[1].value[0].value;
      digestMatches = messageDigest === digest;
    }
    node.value.forEach(walk);
  }
};
infos.forEach(walk);
console.log(JSON.stringify({
  signed: true,
  fingerprint,
  subject: cert.subject.getField("CN")?.value ?? null,
  issuer: cert.issuer.getField("CN")?.value ?? null,
  digestMatches,
  contentLength: originalContent.length,
}));
