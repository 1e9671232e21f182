-- Identity: operational state that is not event-sourced (DESIGN.md: keys, credentials, tokens).
-- Secrets never travel in events (they are published on platform.auth.events); they live here.
CREATE SCHEMA IF NOT EXISTS identity;

-- The ES256 signing-key ring; private keys sealed with the secret box (identity.jwt.v1).
CREATE TABLE identity.signing_keys (
  kid                 text PRIMARY KEY,
  created_at          bigint NOT NULL,
  activates_at        bigint NOT NULL,
  retired_at          bigint,
  public_jwk          jsonb NOT NULL,
  sealed_private_jwk  text NOT NULL
);

-- One row per account: the login email (unique, lower case) and the argon2id hash.
CREATE TABLE identity.credentials (
  user_id               text PRIMARY KEY,
  email                 text NOT NULL UNIQUE,
  password_hash         text,
  remembered_tenant_id  text,
  updated_at            timestamptz NOT NULL DEFAULT now()
);

-- Refresh tokens: only SHA-256 hashes. A family is one login; rotation adds a row to it.
CREATE TABLE identity.refresh_tokens (
  token_hash       text PRIMARY KEY,
  family_id        text NOT NULL,
  user_id          text NOT NULL,
  tenant_id        text NOT NULL,
  impersonator_id  text,
  issued_at        timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  rotated_at       timestamptz,
  -- the pair handed out by the rotation, sealed, so a concurrent refresh inside the grace gets it too
  successor_sealed text,
  revoked_at       timestamptz
);
CREATE INDEX refresh_tokens_family ON identity.refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user ON identity.refresh_tokens (user_id);

-- One-time tokens (verify-email, reset, invite, mfa challenge, tenant-selection session, oauth state).
CREATE TABLE identity.one_time_tokens (
  token_hash  text PRIMARY KEY,
  purpose     text NOT NULL,
  user_id     text,
  tenant_id   text,
  email       text,
  payload     jsonb NOT NULL DEFAULT '{}',
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX one_time_tokens_expiry ON identity.one_time_tokens (expires_at);

-- TOTP secrets, sealed (context totp:<userId>).
CREATE TABLE identity.mfa_secrets (
  user_id        text PRIMARY KEY,
  sealed_secret  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);

-- Recovery codes: HMAC hashes only; consumed with DELETE … RETURNING.
CREATE TABLE identity.recovery_codes (
  user_id    text NOT NULL,
  code_hash  text NOT NULL,
  PRIMARY KEY (user_id, code_hash)
);

-- Provider links: (provider_id, external_id) is unique across all users.
CREATE TABLE identity.provider_links (
  id            text PRIMARY KEY,
  user_id       text NOT NULL,
  provider_id   text NOT NULL,
  external_id   text NOT NULL,
  UNIQUE (provider_id, external_id),
  UNIQUE (user_id, provider_id)
);
