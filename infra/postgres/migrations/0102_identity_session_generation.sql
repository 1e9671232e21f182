-- The session generation a refresh token was issued under (issue 22, "sessions end when they
-- must"): a password reset, a lock or a deletion raises the account's or membership's generation
-- (identity's read models), and a token of a lower one no longer renews. NULL: issued before this
-- column existed (renews as before; such families end within their 7 days).
ALTER TABLE identity.refresh_tokens ADD COLUMN session_generation integer;
