// A real OAuth 2.0 / OpenID Connect authorization server (oidc-provider)
// for etdi's identity-provider tests, on 127.0.0.1:$PORT. It shows how an
// IdP is configured to issue etdi tokens:
//
//   - the client credentials grant, with client secrets (basic auth);
//   - JWT access tokens for the resource "urn:etdi" (audience "urn:etdi"),
//     signed ES256; the resource "urn:etdi:<ALG>" picks another algorithm
//     (RS256, PS256, ES256, ES384, EdDSA) with the same audience, and
//     "urn:other" gives audience "urn:other";
//   - RFC 9396 authorization_details of type "etdi_manifest", validated
//     and copied into the access token's authorization_details claim;
//   - token introspection (RFC 7662) and revocation (RFC 7009).
//
// It prints "ready <issuer>" when it listens.
import { generateKeyPair, exportJWK } from "jose";
import Provider, { errors } from "oidc-provider";

const port = Number(process.env.PORT || 0);
const issuer = `http://127.0.0.1:${port}`;
const ttl = Number(process.env.TOKEN_TTL || 300);

async function signingKey(alg, kid, opts) {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...opts });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid, alg, use: "sig" };
}

const keys = [
  await signingKey("ES256", "ec256-1"),
  await signingKey("RS256", "rsa-1", { modulusLength: 2048 }),
  await signingKey("PS256", "rsa-pss-1", { modulusLength: 2048 }),
  await signingKey("ES384", "ec384-1"),
  await signingKey("EdDSA", "ed-1", { crv: "Ed25519" }),
];

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: "client_secret_basic",
  authorization_details_types: ["etdi_manifest"],
  ...(scope ? { scope } : {}),
});

const provider = new Provider(issuer, {
  clients: [
    client("acme-ci", "net:fetch geo:read"),
    client("narrow-ci", "net:fetch"),
    client("globex-ci", "net:fetch geo:read"),
    // The client a verifier uses for introspection; it gets no tokens.
    { ...client("etdi-verifier"), grant_types: [] },
  ],
  jwks: { keys },
  scopes: ["net:fetch", "geo:read", "fs:read"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => "urn:etdi",
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        let audience = "urn:etdi";
        let alg = "ES256";
        if (resource.startsWith("urn:etdi:")) alg = resource.slice("urn:etdi:".length);
        else if (resource !== "urn:etdi") audience = resource;
        return {
          scope: "net:fetch geo:read fs:read",
          audience,
          accessTokenTTL: ttl,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg } },
        };
      },
    },
    richAuthorizationRequests: {
      enabled: true,
      types: {
        etdi_manifest: {
          validate(ctx, detail) {
            if (typeof detail.digest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(detail.digest)) {
              throw new errors.InvalidAuthorizationDetails("etdi_manifest needs digest sha256:<64 hex>");
            }
            if (typeof detail.provider !== "string" || typeof detail.server !== "string") {
              throw new errors.InvalidAuthorizationDetails("etdi_manifest needs provider and server");
            }
          },
        },
      },
      // What the client asked for, validated above, goes into the token.
      authorizationDetailsForAccessToken(ctx) {
        const p = ctx.oidc.params.authorization_details;
        return typeof p === "string" ? JSON.parse(p) : p;
      },
      authorizationDetailsForIntrospection(ctx, token) {
        return token.rar;
      },
      authorizationDetailsForGrantSource() {
        return undefined;
      },
    },
  },
});

const server = provider.listen(port, "127.0.0.1", () => {
  const actual = server.address().port;
  if (actual !== port) {
    console.error("PORT must be given: the issuer URL contains it");
    process.exit(2);
  }
  console.log(`ready ${issuer}`);
});
