// Signs a JWT with the "jose" package, an implementation independent of
// etdi's: node jose-token.mjs ALG < claims.json prints {"jwks", "token"}
// with a new key pair of the algorithm (RS256, PS256, ES256, ES384, EdDSA).
import { generateKeyPair, exportJWK, SignJWT } from "jose";

const alg = process.argv[2];
let input = "";
for await (const chunk of process.stdin) input += chunk;
const claims = JSON.parse(input);
const opts = alg === "EdDSA" ? { crv: "Ed25519" } : alg.startsWith("RS") || alg.startsWith("PS") ? { modulusLength: 2048 } : {};
const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...opts });
const jwk = { ...(await exportJWK(publicKey)), kid: `jose-${alg}`, alg, use: "sig" };
const token = await new SignJWT(claims).setProtectedHeader({ alg, kid: jwk.kid, typ: "at+jwt" }).sign(privateKey);
process.stdout.write(JSON.stringify({ jwks: { keys: [jwk] }, token }));
