// A real OAuth2 / OpenID Connect authorization server for the tests: panva's oidc-provider
// (certified OpenID provider library, pinned in package.json / package-lock.json), with its
// own development login and consent pages. Started by
// email_rag_harness/testing/oidc_server.py; configured by the JSON in OIDC_CONFIG:
//   {"port": N, "clients": [{"client_id", "client_secret", "redirect_uris": [...]}],
//    "access_ttl": seconds}
// Any login name is accepted on the development login page (the account id is what is
// typed: the mailbox's address). Access tokens are opaque; introspection (RFC 7662, for
// Dovecot's oauth2 passdb, client_secret_basic) answers with "username" = the account id;
// revoking a refresh token (RFC 7009) revokes its whole grant.
import Provider from 'oidc-provider';

const cfg = JSON.parse(process.env.OIDC_CONFIG);
const issuer = `http://127.0.0.1:${cfg.port}`;

const provider = new Provider(issuer, {
  clients: cfg.clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    redirect_uris: c.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    introspection_endpoint_auth_method: 'client_secret_basic',
    revocation_endpoint_auth_method: 'client_secret_basic',
  })),
  features: {
    devInteractions: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
  },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', 'email'],
  claims: { openid: ['sub'], email: ['email'] },
  async findAccount(ctx, id) {
    return { accountId: id, async claims() { return { sub: id, email: id }; } };
  },
  async extraTokenClaims(ctx, token) {
    return token.kind === 'AccessToken' ? { username: token.accountId } : undefined;
  },
  async issueRefreshToken(ctx, client, code) {
    return client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access');
  },
  rotateRefreshToken: false,
  ttl: {
    AccessToken: cfg.access_ttl || 3600,
    AuthorizationCode: 120,
    Grant: 14 * 24 * 3600,
    Interaction: 600,
    RefreshToken: 14 * 24 * 3600,
    Session: 24 * 3600,
  },
  cookies: { keys: [cfg.cookie_key || 'email-rag-test-oidc-cookie-key'] },
});

provider.on('server_error', (ctx, err) => { console.error('server_error', err); });
provider.listen(cfg.port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
