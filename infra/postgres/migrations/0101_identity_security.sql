-- Identity security (issue 10): address changes confirmed from both addresses, used recovery codes
-- remembered so a replay is told apart from a wrong guess.

-- One pending address change per account: the holder confirms from the old address and verifies
-- the new one; only then does the account's email change (auth.user.email_changed).
CREATE TABLE identity.email_changes (
  user_id        text PRIMARY KEY,
  change_id      text NOT NULL,
  new_email      text NOT NULL,
  old_confirmed  boolean NOT NULL DEFAULT false,
  new_confirmed  boolean NOT NULL DEFAULT false,
  requested_by   text NOT NULL,
  expires_at     timestamptz NOT NULL
);

-- A used recovery code keeps its hash with the time of use: submitting it again is a replay
-- (refused, not counted as a failed guess).
ALTER TABLE identity.recovery_codes ADD COLUMN used_at timestamptz;
