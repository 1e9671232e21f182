import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { commonErrors } from '../shared/errors';
import { RECOVERY } from './constants';
import { identityErrors } from './errors';

/**
 * MFA of an account (spec 000, MFA state): disabled → setup pending → enabled → disabled, and the
 * recovery-attempt lock: 5 failures within 15 minutes lock recovery for 1 hour; the third lockout
 * locks the account (the handler locks the Account too). The secret and the code hashes are kept
 * outside the events; these events say only what happened.
 */
const ev = <T extends string, D extends z.ZodRawShape>(type: T, data: D) =>
  z.object({ type: z.literal(type), data: z.object({ userId: z.string(), ...data }) });
export const MfaEvent = z.discriminatedUnion('type', [
  ev('auth.mfa.setup_started', {}),
  ev('auth.mfa.enabled', {}),
  ev('auth.mfa.disabled', {}),
  ev('auth.mfa.recovery_codes_regenerated', { count: z.number().int() }),
  ev('auth.mfa.recovery_code_used', { remaining: z.number().int() }),
  /** fingerprint: a keyed hash of the wrong code, so a repeated guess counts once (absent in early events) */
  ev('auth.mfa.recovery_failed', { at: z.number(), fingerprint: z.string().optional() }),
  ev('auth.mfa.recovery_locked', { until: z.number(), lockout: z.number().int(), accountLocked: z.boolean() }),
]);
export type MfaEvent = z.infer<typeof MfaEvent>;

export interface Mfa {
  status: 'disabled' | 'pending' | 'enabled';
  /** failed recovery attempts in the current window: when, and the fingerprint of the wrong code */
  failures: { at: number; fingerprint: string }[];
  lockouts: number;
  lockedUntil: number | null;
}

export type MfaCommand =
  | { type: 'StartMfaSetup'; userId: string }
  | { type: 'ConfirmMfa'; userId: string }
  | { type: 'DisableMfa'; userId: string }
  | { type: 'RegenerateRecoveryCodes'; userId: string; count: number }
  | { type: 'UseRecoveryCode'; userId: string; remaining: number; now: number }
  | { type: 'FailRecovery'; userId: string; now: number; fingerprint: string };

/** ms until recovery may be tried again, or 0 */
export const recoveryLockRemaining = (s: Mfa, now: number): number =>
  s.lockedUntil !== null && now < s.lockedUntil ? s.lockedUntil - now : 0;

export const mfaDecider: Decider<Mfa, MfaCommand, MfaEvent> = {
  initialState: () => ({ status: 'disabled', failures: [], lockouts: 0, lockedUntil: null }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'auth.mfa.setup_started':
        return { ...s, status: 'pending' };
      case 'auth.mfa.enabled':
        return { ...s, status: 'enabled' };
      case 'auth.mfa.disabled':
        return { ...s, status: 'disabled' };
      case 'auth.mfa.recovery_codes_regenerated':
        return s;
      case 'auth.mfa.recovery_code_used':
        return { ...s, failures: [] };
      case 'auth.mfa.recovery_failed':
        return {
          ...s,
          failures: [...inWindow(s, e.data.at), { at: e.data.at, fingerprint: e.data.fingerprint ?? `${e.data.at}` }],
        };
      case 'auth.mfa.recovery_locked':
        return { ...s, failures: [], lockouts: e.data.lockout, lockedUntil: e.data.until };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'StartMfaSetup':
        if (s.status === 'enabled') throw identityErrors.mfaAlreadyEnabled();
        return [{ type: 'auth.mfa.setup_started', data: { userId: c.userId } }];
      case 'ConfirmMfa':
        if (s.status === 'enabled') throw identityErrors.mfaAlreadyEnabled();
        if (s.status !== 'pending') throw identityErrors.mfaNotPending();
        return [{ type: 'auth.mfa.enabled', data: { userId: c.userId } }];
      case 'DisableMfa':
        if (s.status !== 'enabled') throw identityErrors.mfaNotEnabled();
        return [{ type: 'auth.mfa.disabled', data: { userId: c.userId } }];
      case 'RegenerateRecoveryCodes':
        if (s.status !== 'enabled') throw identityErrors.mfaNotEnabled();
        return [{ type: 'auth.mfa.recovery_codes_regenerated', data: { userId: c.userId, count: c.count } }];
      case 'UseRecoveryCode':
        if (recoveryLockRemaining(s, c.now) > 0)
          throw identityErrors.accountLocked('Too many failed recovery attempts; try again later.');
        if (s.status !== 'enabled') throw commonErrors.unauthorized('The recovery code is not valid.');
        return [{ type: 'auth.mfa.recovery_code_used', data: { userId: c.userId, remaining: c.remaining } }];
      case 'FailRecovery':
        return failRecovery(c, s);
      default:
        return assertNever(c);
    }
  },
};

const inWindow = (s: Mfa, now: number) => s.failures.filter((f) => f.at > now - RECOVERY.windowMs);

/**
 * A wrong code counts once per window: replays of one guess (or of a code just used by a
 * concurrent request) cannot lock the holder out faster than distinct guesses would.
 */
const failRecovery = (c: Extract<MfaCommand, { type: 'FailRecovery' }>, s: Mfa): MfaEvent[] => {
  if (recoveryLockRemaining(s, c.now) > 0) return [];
  const recent = inWindow(s, c.now);
  if (recent.some((f) => f.fingerprint === c.fingerprint)) return [];
  const failed: MfaEvent = {
    type: 'auth.mfa.recovery_failed',
    data: { userId: c.userId, at: c.now, fingerprint: c.fingerprint },
  };
  if (recent.length + 1 < RECOVERY.maxAttempts) return [failed];
  const lockout = s.lockouts + 1;
  return [
    failed,
    {
      type: 'auth.mfa.recovery_locked',
      data: {
        userId: c.userId,
        until: c.now + RECOVERY.lockMs,
        lockout,
        accountLocked: lockout >= RECOVERY.lockoutsBeforeLock,
      },
    },
  ];
};
